package front

// ReadAnswer is readAnswer, for the tests.
var ReadAnswer = readAnswer
