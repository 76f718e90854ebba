package ratelimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidSetting is matched (errors.Is) by every error ParseSetting and
// Setting.Validate return. The error's message itself is one readable
// sentence meant for the operator, e.g. "limit must be a finite number of
// boots per second, at least 0"; the HTTP API answers it with status 400.
var ErrInvalidSetting = errors.New("ratelimit: invalid boot-limit setting")

// settingError carries the operator-facing sentence of a refused setting.
type settingError struct{ msg string }

func (e *settingError) Error() string        { return e.msg }
func (e *settingError) Is(target error) bool { return target == ErrInvalidSetting }

func invalid(format string, args ...any) error {
	return &settingError{msg: fmt.Sprintf(format, args...)}
}

// The sentences of the refusals that more than one path gives.
const (
	msgLimit = "limit must be a finite number of boots per second, at least 0"
	msgBurst = "burst must be a whole number of boots, at least 1 and at most 1000000000"
	msgMode  = `mode must be "auto" or "manual"`
)

// Setting is an operator's change of the boot limit (PUT /v1/ratelimit).
// In ModeManual, Limit is the pinned limit in boots per second and Burst the
// burst, 0 meaning DefaultBurst(Limit). In ModeAuto, Limit is 0: the
// controller takes over from the current limit; Burst, when above 0, pins
// the burst the controller keeps while it moves the limit. The zero value is not a
// valid setting.
type Setting struct {
	Mode  string
	Limit float64
	Burst int
}

// Validate reports whether s is a setting the API accepts. Its errors match
// ErrInvalidSetting and read as one sentence.
func (s Setting) Validate() error {
	switch s.Mode {
	case ModeAuto:
		if s.Limit != 0 {
			return invalid("limit is only accepted in manual mode; in auto mode the controller sets it")
		}
		if s.Burst < 0 || s.Burst > maxBurst {
			return invalid(msgBurst)
		}
	case ModeManual:
		if !finite(s.Limit) || s.Limit < 0 {
			return invalid(msgLimit)
		}
		if s.Burst < 0 || s.Burst > maxBurst {
			return invalid(msgBurst)
		}
	case "":
		return invalid(msgMode + ", and it is missing")
	default:
		return invalid(msgMode+", not %q", s.Mode)
	}
	return nil
}

// withinCeiling refuses a manual limit above the ceiling of cfg (the
// --boot-limit-max): the operator's limit would be enforced while the
// floor, the ceiling and every figure of the README say otherwise. The
// error matches ErrInvalidSetting and names the ceiling.
func (s Setting) withinCeiling(cfg ControllerConfig) error {
	if s.Mode == ModeManual && s.Limit > cfg.Ceiling {
		return invalid("a manual limit of %s boots/s is above the ceiling of %s boots/s (--boot-limit-max): set at most %s, or restart mcrib with a higher --boot-limit-max",
			fmtLimit(s.Limit), fmtLimit(cfg.Ceiling), fmtLimit(cfg.Ceiling))
	}
	return nil
}

// ParseSetting decodes the body of PUT /v1/ratelimit strictly: exactly one
// JSON object with the fields mode, limit and burst and no others; mode a
// string, limit a JSON number (finite, >= 0, required in manual mode and
// refused in auto mode), burst a whole JSON number >= 1 (manual mode only).
// Every error matches ErrInvalidSetting and its message is one sentence.
func ParseSetting(body []byte) (Setting, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return Setting{}, invalid(`the body is empty; send {"mode": "manual", "limit": N} or {"mode": "auto"}`)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return Setting{}, invalid(`the body must be a JSON object such as {"mode": "manual", "limit": 50}`)
		}
		return Setting{}, invalid("the body is not valid JSON (%s)", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return Setting{}, invalid("the body must hold exactly one JSON object and nothing after it")
	}
	var unknown []string
	for name := range fields {
		switch name {
		case "mode", "limit", "burst":
		default:
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Setting{}, invalid("unknown field %s; the fields are mode, limit and burst", strings.Join(unknown, ", "))
	}

	var s Setting
	mode, ok := fields["mode"]
	if !ok {
		return Setting{}, invalid(msgMode + ", and it is missing")
	}
	if err := json.Unmarshal(mode, &s.Mode); err != nil || isNull(mode) {
		return Setting{}, invalid(msgMode + " (a JSON string)")
	}
	if s.Mode != ModeAuto && s.Mode != ModeManual {
		return Setting{}, invalid(msgMode+", not %q", s.Mode)
	}

	limit, hasLimit := fields["limit"]
	burst, hasBurst := fields["burst"]
	if s.Mode == ModeAuto {
		if hasLimit {
			return Setting{}, invalid("limit is only accepted in manual mode; in auto mode the controller sets it")
		}
	} else if !hasLimit {
		return Setting{}, invalid("manual mode needs a limit: a finite number of boots per second, at least 0")
	} else {
		if !isNumber(limit) {
			return Setting{}, invalid(msgLimit)
		}
		v, err := strconv.ParseFloat(string(limit), 64)
		if err != nil || !finite(v) || v < 0 {
			return Setting{}, invalid(msgLimit)
		}
		s.Limit = v
	}
	if hasBurst {
		if !isNumber(burst) {
			return Setting{}, invalid(msgBurst)
		}
		b, err := strconv.ParseInt(string(burst), 10, 64)
		if err != nil || b < 1 || b > maxBurst {
			return Setting{}, invalid(msgBurst)
		}
		s.Burst = int(b)
	}
	return s, s.Validate()
}

// isNumber reports whether raw (a valid JSON value) is a JSON number.
func isNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// isNull reports whether raw (a valid JSON value) is null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// applySetting returns base changed by the operator's setting st. by names
// who asked ("" leaves it out of the reason). Switching to auto resumes from
// the current limit, held inside the floor and the ceiling of cfg; callers
// do not apply an auto setting to a document that is already auto. hitRate
// is written when known (ok), null otherwise.
func applySetting(base Document, st Setting, by string, now time.Time, cfg ControllerConfig, hitRate float64, ok bool) Document {
	next := base
	next.UpdatedAt = stamp(now)
	next.Floor, next.Ceiling = cfg.Floor, cfg.Ceiling
	next.HitRate = nil
	if ok {
		next.HitRate = RateOf(hitRate)
	}
	byWhom := ""
	if by != "" {
		byWhom = " by " + by
	}
	switch st.Mode {
	case ModeManual:
		next.Mode = ModeManual
		next.Limit = st.Limit
		next.Burst = st.Burst
		if next.Burst == 0 {
			next.Burst = DefaultBurst(st.Limit)
			next.Reason = fmt.Sprintf("set to manual %s boots/s%s", fmtLimit(st.Limit), byWhom)
		} else {
			next.Reason = fmt.Sprintf("set to manual %s boots/s with burst %d%s", fmtLimit(st.Limit), st.Burst, byWhom)
		}
		if base.Mode == ModeAuto {
			next.AutoLimit = base.Limit
			next.AutoReason = fmt.Sprintf("the controller keeps computing its own limit from %s boots/s while the limit is manual", fmtLimit(base.Limit))
		}
	case ModeAuto:
		from := base.Limit
		to := min(max(from, cfg.Floor), cfg.Ceiling)
		next.Mode = ModeAuto
		next.Limit = to
		next.AutoBurst = st.Burst
		next.Burst = autoBurst(next, to)
		next.AutoLimit = to
		next.AutoReason = ""
		switch {
		case to == from && base.Mode == ModeAuto:
			next.Reason = fmt.Sprintf("burst set to %d in auto mode%s", next.Burst, byWhom)
		case to == from:
			next.Reason = fmt.Sprintf("set to auto%s, resuming from %s boots/s", byWhom, fmtLimit(to))
		case to > from:
			next.Reason = fmt.Sprintf("set to auto%s, resuming from the floor of %s boots/s (the manual limit was %s)", byWhom, fmtLimit(to), fmtLimit(from))
		default:
			next.Reason = fmt.Sprintf("set to auto%s, resuming from the ceiling of %s boots/s (the manual limit was %s)", byWhom, fmtLimit(to), fmtLimit(from))
		}
	}
	return next
}
