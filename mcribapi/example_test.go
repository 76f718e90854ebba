package mcribapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcrib/mcrib/mcribapi"
)

// A client sends a DrainRequest; the server reads it with
// ParseDrainRequest, and answers a refusal with StatusCode and Sentence.
func ExampleParseDrainRequest() {
	percent := 50
	body, _ := json.Marshal(mcribapi.DrainRequest{Reason: "link to b flapping", Percent: &percent})
	fmt.Println(string(body))

	d, err := mcribapi.ParseDrainRequest(body)
	fmt.Println(d.Percent, d.StepPercent, d.IntervalText(), err)

	_, err = mcribapi.ParseDrainRequest([]byte(`{"reason": "x", "step_interval": "2h"}`))
	fmt.Println(mcribapi.StatusCode(err) == http.StatusBadRequest, mcribapi.Sentence(err))
	// Output:
	// {"reason":"link to b flapping","percent":50}
	// 50 10 30s <nil>
	// true "step_interval" must be from 1s to 1h, not 2h
}
