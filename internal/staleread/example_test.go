package staleread_test

import (
	"fmt"

	"github.com/mcrib/mcrib/internal/staleread"
)

// Example records the shape the outside test of issue 26 found: c1, still
// on generation 4, deletes a key at the slot's old holder only; c2, on
// generation 5, then reads the new holder's copy of the value from before
// the delete. Both maps were fresh, so the read is stale across the two
// generations.
func Example() {
	h := staleread.New(staleread.Options{})
	for _, o := range []*staleread.Op{
		{Client: "c1", Kind: staleread.Set, Key: "user:7", Value: "c1-1", OK: true, Fresh: true, Gen: 4, Start: 1, End: 2},
		{Client: "c1", Kind: staleread.Delete, Key: "user:7", OK: true, Fresh: true, Gen: 4, Start: 3, End: 4},
		{Client: "c2", Kind: staleread.Get, Key: "user:7", Value: "c1-1", Hit: true, Fresh: true, Gen: 5, Start: 5, End: 6},
	} {
		h.Add(o)
	}
	for _, v := range h.Check() {
		fmt.Println(v)
	}
	// Output:
	// stale read: c2's get of "user:7" (generation 5, fresh true, 5–6) returned "c1-1", which c1's delete of "user:7" (generation 4, fresh true, 3–4) replaced before the get began
}
