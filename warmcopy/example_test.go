package warmcopy_test

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/warmcopy"
)

// ExamplePick shows the order of a copy: of a source's items, the keys of
// the warming slot (here slot 0 of one: every key), most recently used
// first, without those about to expire.
func ExamplePick() {
	now := time.Unix(1_796_409_954, 0) // the source's clock (stats time)
	dump := []warmcopy.Entry{
		{Key: "user:1", Exp: -1, LastAccess: now.Unix() - 300},
		{Key: "user:2", Exp: now.Unix() + 5, LastAccess: now.Unix()},
		{Key: "user:3", Exp: now.Unix() + 600, LastAccess: now.Unix() - 2},
	}
	picked, skipped := warmcopy.Pick(dump, 0, 1, now, 0)
	for _, e := range picked {
		fmt.Println(e.Key)
	}
	fmt.Println("expiring:", skipped[warmcopy.SkipExpiring])
	// Output:
	// user:3
	// user:1
	// expiring: 1
}
