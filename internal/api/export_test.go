package api

// TodosEncodes is how many GET /todos answers s has encoded.
func (s *Server) TodosEncodes() int64 { return s.answers.encodes.Load() }
