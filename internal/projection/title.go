package projection

import (
	"encoding/json"
	"path"
	"strings"
	"unicode/utf8"
)

// MaxPromptTitleChars bounds a title taken from a prompt.
const MaxPromptTitleChars = 80

// TitleOf is a title from a prompt (or a summary, or a subagent's task):
// its first line that says something, at most MaxPromptTitleChars, with
// each control character, line separator and bidirectional control
// (U+202E and its kin, which would reorder the text around the title)
// made a space. "" when the text says nothing.
func TitleOf(text string) string {
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	line = strings.Map(func(r rune) rune {
		if breaksLine(r) || bidiControl(r) || r == 0 {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(line, "\uFFFD"))
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > MaxPromptTitleChars {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:MaxPromptTitleChars-1])) + "…"
	}
	if Blank(line) {
		return ""
	}
	return line
}

// TitleText reports whether s, trimmed, may be a title as given: one line
// without control characters or bidirectional controls.
func TitleText(s string) bool {
	return OneLine(s) && strings.IndexFunc(s, bidiControl) < 0
}

// bidiControl reports the invisible marks that reorder text around them
// (embeddings, overrides, isolates and the directional marks).
func bidiControl(r rune) bool {
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' ||
		r == '\u200e' || r == '\u200f' || r == '\u061c'
}

// agentNames are the agents' names as a person reads them ("Claude
// Code"), by the name Tack gives them ("claude-code"): each agent's file
// in internal/transcript declares its own, registered here with the agent
// (RegisterAgentName).
var agentNames = map[string]string{}

// RegisterAgentName records how a person reads the name of the agent
// named agent, for DefaultTitle. It is called at init; it panics on an
// agent named twice or a name that is no title.
func RegisterAgentName(agent, display string) {
	if _, dup := agentNames[agent]; dup || agent == "" || !TitleText(display) || strings.TrimSpace(display) == "" {
		panic("projection: agent " + agent + " named twice or without a title")
	}
	agentNames[agent] = display
}

// DefaultTitle is the title of a session no prompt has titled yet: its
// agent, its project (the working directory's base name) and the time it
// was made, in UTC, such as "Claude Code · webapp · 14:02 UTC".
func DefaultTitle(agent, cwd string, made Time) string {
	name := agentNames[agent]
	switch {
	case name != "":
	case agent != "" && TitleText(agent):
		name = agent
	default:
		name = "Session"
	}
	parts := []string{name}
	if base := path.Base(strings.ReplaceAll(cwd, `\`, "/")); cwd != "" && base != "/" && base != "." {
		if t := TitleOf(base); t != "" {
			parts = append(parts, t)
		}
	}
	parts = append(parts, made.UTC().Format("15:04")+" UTC")
	return strings.Join(parts, " · ")
}

// PromptTitle is the title a batch's events give a session that has none
// yet: that of the first person's prompt among them (a message/user that
// no harness wrote) that says something; "" when none does.
func PromptTitle(events []Event) string { return promptTitle(events, "") }

// StandInTitle is the title a batch's events give a subagent's session
// that has none yet: that of the first prompt another agent wrote it (a
// message/user of source "agent") that says something, which stands in
// for the task its parent's call gave it until that call is known; ""
// when none does.
func StandInTitle(events []Event) string { return promptTitle(events, SourceAgent) }

// promptTitle is the title of the first message/user of source among
// events that says something.
func promptTitle(events []Event, source string) string {
	for _, ev := range events {
		if ev.Type != TypeMessageUser {
			continue
		}
		var d userData
		if json.Unmarshal(ev.Data, &d) != nil || d.Source != source {
			continue
		}
		if t := TitleOf(d.Text); t != "" {
			return t
		}
	}
	return ""
}

// Content reports whether a batch's events give a session content to be
// listed for: anything but the agent's word that the session ended.
func Content(events []Event) bool {
	for _, ev := range events {
		if ev.Type != TypeSessionEnd {
			return true
		}
	}
	return false
}
