package metrics_test

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/metrics"
)

func Example() {
	rec, handler, err := metrics.New(metrics.Options{
		// Read at every scrape; in mcrib serve it reads the loop's Status.
		Gauges: func() metrics.Gauges {
			return metrics.Gauges{
				Generation:    7,
				LastReconcile: time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC),
				Leader:        true,
				NodesByState:  map[mcribapi.NodeState]int{"serving": 16, "spare": 1},
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The control loop and the boot API record events.
	rec.Pass("ok", 40*time.Millisecond)
	rec.Flush("placement")
	rec.BootAdmission(false)

	// Serve handler at /metrics; here it is scraped once.
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, prefix := range []string{"mcrib_flushes_total", "mcrib_boot_admissions_total", "mcrib_nodes", "mcrib_slotmap", "mcrib_last_reconcile", "mcrib_reconcile_passes_total{result=\"ok\"}"} {
			if strings.HasPrefix(line, prefix) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// mcrib_boot_admissions_total{result="admitted"} 0
	// mcrib_boot_admissions_total{result="rejected"} 1
	// mcrib_flushes_total{reason="placement"} 1
	// mcrib_flushes_total{reason="returned"} 0
	// mcrib_last_reconcile_timestamp_seconds 1.7959572e+09
	// mcrib_nodes{state="down"} 0
	// mcrib_nodes{state="flushing"} 0
	// mcrib_nodes{state="held"} 0
	// mcrib_nodes{state="incoming"} 0
	// mcrib_nodes{state="serving"} 16
	// mcrib_nodes{state="spare"} 1
	// mcrib_nodes{state="warming"} 0
	// mcrib_reconcile_passes_total{result="ok"} 1
	// mcrib_slotmap_generation 7
	// mcrib_slotmap_updated_timestamp_seconds 0
}
