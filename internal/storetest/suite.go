package storetest

import "testing"

// Run runs the conformance suite, every test of the Store contract, on
// stores f opens: each backend's tests call it once for each kind of store
// it makes, as River's drivers each run riverdrivertest.
func Run(t *testing.T, f Factory) {
	for _, c := range suite {
		t.Run(c.name, func(t *testing.T) { c.test(t, f) })
	}
}

// suite lists the conformance tests Run runs, each by the name its
// subtest takes.
var suite = []struct {
	name string
	test func(t *testing.T, f Factory)
}{
	{"Accounts", testAccounts},
	{"AgentTimes", testAgentTimes},
	{"SessionState", testSessionState},
	{"AgentSession", testAgentSession},
	{"Children", testChildren},
	{"NeedsYouEndsWithTheNextEvent", testNeedsYouEndsWithTheNextEvent},
	{"AgentStatus", testAgentStatus},
	{"ConcurrentAppendsEqualReplay", testConcurrentAppendsEqualReplay},
	{"CreateAndRead", testCreateAndRead},
	{"SessionsOrderAndPaging", testSessionsOrderAndPaging},
	{"BadCursor", testBadCursor},
	{"AppendGaplessSeqs", testAppendGaplessSeqs},
	{"BatchAtomicity", testBatchAtomicity},
	{"ExpectedSeq", testExpectedSeq},
	{"Idempotency", testIdempotency},
	{"TurnRules", testTurnRules},
	{"TodosProjection", testTodosProjection},
	{"HistoryPaging", testHistoryPaging},
	{"EventsPaging", testEventsPaging},
	{"MessagesSurface", testMessagesSurface},
	{"NotFound", testNotFound},
	{"ConcurrentAppends", testConcurrentAppends},
	{"DerivedListWrites", testDerivedListWrites},
	{"ConcurrentDerivedWrites", testConcurrentDerivedWrites},
	{"IdempotencyRetention", testIdempotencyRetention},
	{"EventKeys", testEventKeys},
	{"NeedsYou", testNeedsYou},
	{"Hooked", testHooked},
	{"Goal", testGoal},
	{"SessionNotes", testSessionNotes},
	{"RememberCall", testRememberCall},
	{"NoteRetention", testNoteRetention},
	{"PagesBoundedByBytes", testPagesBoundedByBytes},
	{"MessagesPaged", testMessagesPaged},
	{"MessagesPairing", testMessagesPairing},
	{"IncrementalProjectionEqualsReplay", testIncrementalProjectionEqualsReplay},
	{"SummaryCurrentItemAndEndReason", testSummaryCurrentItemAndEndReason},
	{"SearchTitles", testSearchTitles},
	{"SearchScanBound", testSearchScanBound},
	{"PromptTitlesUntitled", testPromptTitlesUntitled},
	{"RenameIsFinal", testRenameIsFinal},
	{"UnlistedUntilContent", testUnlistedUntilContent},
}
