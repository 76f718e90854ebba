package cli

import (
	"fmt"
	"time"
)

// ago tells how long before now t was, as a person says it: "just now",
// "2 s ago", "3 min ago", "2 h 5 min ago", "3 days ago"; a t after now
// (a time to come, or clocks that differ) is "in 2 s".
func ago(t, now time.Time) string {
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < 0:
		return "in " + span(-d)
	case d < time.Second:
		return "just now"
	}
	return span(d) + " ago"
}

// span tells a positive duration in the largest units that keep it exact
// enough to act on: seconds up to 2 minutes, minutes up to an hour, hours
// and minutes up to 2 days, then days.
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0 s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
}

// whenText tells a time as its age and, for correlating with logs, the
// time itself to the second: "2 s ago, at 2026-11-29T13:00:00Z";
// "at an unknown time" for the zero time.
func whenText(t, now time.Time) string {
	if t.IsZero() {
		return "at an " + unknownText + " time"
	}
	return ago(t, now) + ", at " + timeOr(t, "")
}

// untilText tells a time to come as the time itself to the second and how
// far off it is: "2026-11-29T13:02:00Z (in 2 min)".
func untilText(t, now time.Time) string {
	if t.IsZero() {
		return unknownText
	}
	return timeOr(t, "") + " (" + ago(t, now) + ")"
}
