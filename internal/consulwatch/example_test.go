package consulwatch_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/consulwatch"
)

// A watch of one KV key. The query here plays Consul's part with scripted
// answers; a real one is a single call:
//
//	func(ctx context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
//		return client.KV().Get(key, q)
//	}
func Example() {
	answers := []struct {
		value string
		index uint64
	}{
		{"v1", 10},
		{"v1", 10}, // the wait timed out: nothing moved
		{"v2", 12},
		{"v2", 13}, // another key's write moved the index: equal, skipped
		{"v3", 4},  // Consul restarted: the index went backwards
		{"v3", 4},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	i := 0
	query := func(ctx context.Context, q *api.QueryOptions) (string, *api.QueryMeta, error) {
		if i == len(answers) {
			cancel() // the end of the script
			<-ctx.Done()
			return "", nil, ctx.Err()
		}
		a := answers[i]
		i++
		fmt.Printf("query WaitIndex=%d\n", q.WaitIndex)
		return a.value, &api.QueryMeta{LastIndex: a.index}, nil
	}
	consulwatch.Run(ctx, consulwatch.Options[string]{
		Name:        "mcrib/default/example",
		MinInterval: time.Millisecond,
		Equal:       func(a, b string) bool { return a == b },
	}, query, func(value string, index uint64) error {
		fmt.Printf("  changed: %s at index %d\n", value, index)
		return nil
	}, func(err error) {
		fmt.Println("  error:", err)
	})
	// Output:
	// query WaitIndex=0
	//   changed: v1 at index 10
	// query WaitIndex=10
	// query WaitIndex=10
	//   changed: v2 at index 12
	// query WaitIndex=12
	// query WaitIndex=13
	//   changed: v3 at index 4
	// query WaitIndex=0
}
