package transcript

import "encoding/json"

// parserState is what a Parser has read of its file, as JSON: a reader in
// another process (`tack hook`, once per hook) resumes the file where the
// last one stopped instead of reading it all again.
type parserState struct {
	Format    Format                     `json:"format"`
	Info      Info                       `json:"info"`
	Subagent  bool                       `json:"subagent,omitempty"`
	Thread    string                     `json:"thread,omitempty"`
	Inherited bool                       `json:"inherited,omitempty"`
	Open      bool                       `json:"open,omitempty"`
	Calls     map[string]string          `json:"calls,omitempty"`
	Pending   map[string]json.RawMessage `json:"pending,omitempty"`
	Skipped   map[string]int             `json:"skipped,omitempty"`
	Children  map[string]*Parser         `json:"children,omitempty"`
	Roots     map[string]string          `json:"roots,omitempty"`
	Delegated map[string]string          `json:"delegated,omitempty"`
	Turn      string                     `json:"turn,omitempty"`
	Made      int64                      `json:"made,omitempty"`
	Said      string                     `json:"said,omitempty"`
	Responses int                        `json:"responses,omitempty"`
	InResp    bool                       `json:"inResponse,omitempty"`
}

// MarshalJSON is the parser's state (parserState).
func (p *Parser) MarshalJSON() ([]byte, error) {
	return json.Marshal(parserState{Format: p.format, Info: p.info, Subagent: p.subagent, Thread: p.thread,
		Inherited: p.inherited, Open: p.open, Calls: p.calls, Pending: p.pending, Skipped: p.skipped,
		Children: p.children, Roots: p.roots, Delegated: p.delegated, Turn: p.turn, Made: p.made, Said: p.said,
		Responses: p.responses, InResp: p.inResponse})
}

// UnmarshalJSON restores a parser MarshalJSON wrote: the next line it reads
// maps as it would have in the parser that wrote it.
func (p *Parser) UnmarshalJSON(b []byte) error {
	var st parserState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	*p = *newParser(st.Format, st.Info.Key)
	p.info, p.subagent, p.thread, p.inherited, p.open = st.Info, st.Subagent, st.Thread, st.Inherited, st.Open
	p.roots, p.delegated, p.turn, p.made, p.said = st.Roots, st.Delegated, st.Turn, st.Made, st.Said
	p.responses, p.inResponse = st.Responses, st.InResp
	for k, v := range st.Calls {
		p.calls[k] = v
	}
	for k, v := range st.Pending {
		p.pending[k] = v
	}
	for k, v := range st.Skipped {
		p.skipped[k] = v
	}
	if len(st.Children) > 0 {
		p.children = st.Children
		if p.roots == nil {
			p.roots = map[string]string{}
		}
		for _, c := range p.children {
			c.delegator = p
		}
	}
	return nil
}
