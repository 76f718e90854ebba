package bootgate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mcrib/mcrib/internal/bootgate"
)

// oneBoot admits one boot, then refuses with a wait of a second.
type oneBoot struct{ used bool }

func (o *oneBoot) Admit() (bool, time.Duration) {
	ok := !o.used
	o.used = true
	return ok, time.Second
}

func (o *oneBoot) AdmitShare(int) (bool, time.Duration) { return o.Admit() }

// A replica that leads answers boots from its limiter; here the
// simulation's way: ServeHTTP with a recorder.
func Example() {
	g, err := bootgate.New(bootgate.Options{
		Admitter: &oneBoot{},
		Leader:   func() (bool, string) { return true, "10.0.0.1:7070" },
		ID:       "10.0.0.1:7070",
	})
	if err != nil {
		panic(err)
	}
	for range 2 {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/boot", nil))
		fmt.Print(rec.Code, " ", rec.Header().Get("Retry-After"), " ", rec.Body.String())
	}
	// Output:
	// 200  {"admitted":true}
	// 429 1 {"admitted":false}
}
