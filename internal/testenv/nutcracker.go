package testenv

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// nutcrackerReadyTimeout bounds how long StartNutcracker waits for the pool
// to accept connections.
const nutcrackerReadyTimeout = 20 * time.Second

// Nutcracker is a twemproxy (nutcracker) process serving the pools of one
// config file: its Process handle and its addresses. Restart stops it with
// SIGTERM and starts it again on the same config file, which it reads anew:
// the way an operator applies a changed config, since nutcracker has no
// reload. Its zero value is not usable; use StartNutcracker. Methods are
// safe for concurrent use, but Restart must not race with itself.
type Nutcracker struct {
	*Process
	// Addr is the listen address of the config's pool, as given to
	// StartNutcracker.
	Addr string
	// Conf is the path of the config file.
	Conf string

	statsPort int
}

// NutcrackerBinary returns the path of nutcracker (Debian package
// nutcracker), looked up as LookPath does. It skips the test under -short
// (see SkipShort). When nutcracker is missing the test is skipped, or
// failed when the environment variable CI is set.
func NutcrackerBinary(t testing.TB) string {
	t.Helper()
	SkipShort(t, "nutcracker")
	return LookPath(t, "nutcracker", "run `make deps`")
}

// CheckNutcrackerConfig runs `nutcracker -t` on the config file conf and
// returns an error with nutcracker's output when it finds the file invalid.
func CheckNutcrackerConfig(t testing.TB, conf string) error {
	t.Helper()
	out, err := exec.Command(NutcrackerBinary(t), "-t", "-c", conf).CombinedOutput()
	if err != nil {
		return errors.New("testenv: nutcracker -t: " + err.Error() + ": " + string(out))
	}
	return nil
}

// StartNutcracker starts `nutcracker -c conf` with its stats server on a
// free port of 127.0.0.1, and waits until addr, the listen address written
// into conf, accepts connections. The process is killed when the test ends.
func StartNutcracker(t testing.TB, conf, addr string) *Nutcracker {
	t.Helper()
	n := &Nutcracker{Addr: addr, Conf: conf}
	n.Process = newProcess(t, "nutcracker", NutcrackerBinary(t))
	n.ready, n.readyTimeout, n.readyInterval = n.accepts, nutcrackerReadyTimeout, 10*time.Millisecond
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		n.statsPort = FreePort(t)
		n.setArgs("-c", n.Conf, "-a", "127.0.0.1", "-s", strconv.Itoa(n.statsPort))
		if err = n.launch(); err == nil {
			return n
		}
		if !errors.Is(err, errExited) {
			break
		}
		// Most likely the stats port was taken between FreePort and bind.
	}
	t.Fatalf("testenv: starting nutcracker on %s: %v\n%s", conf, err, n.tail(20))
	return nil
}

// accepts reports whether the config's pool accepts connections.
func (n *Nutcracker) accepts() bool {
	c, err := net.DialTimeout("tcp", n.Addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
