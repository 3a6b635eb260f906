package projection_test

// Projection knows no agent: the shapes of the agents' list tools
// (TodoWrite, update_plan) and their names are declared in their files
// in internal/transcript, which registers them here at init. Its tests
// run with them, as every binary does.
import _ "github.com/tack-dev/tack/internal/transcript"
