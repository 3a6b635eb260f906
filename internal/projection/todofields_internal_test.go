package projection

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestTodoFieldsFastPath: on random lists — keys right, wrong in case,
// unknown, missing or twice; values strings (escaped, beyond ASCII,
// invalid UTF-8, lone surrogates), numbers, null, objects; items not
// objects; the list not an array — the fast path either declines or
// reads exactly what the long way reads, and it takes the common list.
func TestTodoFieldsFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{`"content"`, `"status"`, `"content"`, `"status"`, `"Content"`, `"priority"`, `"con\u0074ent"`}
	values := []string{`"fix the bug"`, `"pending"`, `"in_progress"`, `"a \"quoted\" \u00e9 \ud83d\ude00"`, `"日本"`,
		"\"\xff\"", `"\ud800"`, `""`, `"  "`, `1`, `null`, `{}`, `["x"]`, `true`}
	taken := 0
	for range 50_000 {
		var b strings.Builder
		switch rng.IntN(20) {
		case 0:
			b.WriteString(`null`)
		case 1:
			b.WriteString(`{"content":"x","status":"pending"}`)
		default:
			b.WriteString("[")
			for i := range rng.IntN(4) {
				if i > 0 {
					b.WriteString(",")
				}
				if rng.IntN(15) == 0 {
					b.WriteString(values[rng.IntN(len(values))])
					continue
				}
				b.WriteString("{")
				n := 2
				if rng.IntN(3) == 0 {
					n = rng.IntN(4)
				}
				for j := range n {
					if j > 0 {
						b.WriteString(",")
					}
					k := keys[j%2]
					if rng.IntN(4) == 0 {
						k = keys[rng.IntN(len(keys))]
					}
					v := values[rng.IntN(3)]
					if rng.IntN(3) == 0 {
						v = values[rng.IntN(len(values))]
					}
					b.WriteString(" " + k + " : " + v)
				}
				b.WriteString("}")
			}
			b.WriteString("]")
		}
		raw := []byte(b.String())
		fast, ok := todoFieldsFast(raw)
		if !ok {
			continue
		}
		taken++
		slow, err := todoFieldsLong(raw, true)
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: fast %+v, long way %+v (%v)", raw, fast, slow, err)
		}
	}
	if taken < 5000 {
		t.Fatalf("the fast path took %d of 50000 lists", taken)
	}
	if _, ok := todoFieldsFast([]byte(`[{"content":"read the code","status":"completed"},{"status":"pending","content":"ship it"}]`)); !ok {
		t.Fatal("the fast path declined the common list")
	}
}

// FuzzTodoFields holds the fast path to the long way on any input.
func FuzzTodoFields(f *testing.F) {
	f.Add([]byte(`[{"content":"read the code","status":"completed"},{"status":"pending","content":"ship it"}]`))
	f.Add([]byte(`[{"content":"x","content":"y","status":"pending"}]`))
	f.Add([]byte("[{\"content\":\"\xff\",\"status\":\"pending\"}]"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := todoFieldsFast(raw)
		if !ok {
			return
		}
		if slow, err := todoFieldsLong(raw, true); err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, long way %+v (%v)", raw, fast, slow, err)
		}
	})
}
