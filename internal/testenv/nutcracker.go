package testenv

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// nutcrackerReadyTimeout bounds how long StartNutcracker waits for the pool
// to accept connections.
const nutcrackerReadyTimeout = 20 * time.Second

// Nutcracker is a twemproxy (nutcracker) process serving the pools of one
// config file. Its zero value is not usable; use StartNutcracker. Methods
// are safe for concurrent use, but Restart must not race with itself.
type Nutcracker struct {
	// Addr is the listen address of the config's pool, as given to
	// StartNutcracker.
	Addr string
	// Conf is the path of the config file.
	Conf string

	bin       string
	statsPort int
	proc      *process
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
	n := &Nutcracker{Addr: addr, Conf: conf, bin: NutcrackerBinary(t)}
	n.proc = newProcess(t, "nutcracker")
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		n.statsPort = FreePort(t)
		if err = n.start(); err == nil {
			return n
		}
		if !errors.Is(err, errExited) {
			break
		}
		// Most likely the stats port was taken between FreePort and bind.
	}
	t.Fatalf("testenv: starting nutcracker on %s: %v\n%s", conf, err, n.proc.tail(20))
	return nil
}

// start runs nutcracker and waits until its pool accepts connections.
func (n *Nutcracker) start() error {
	err := n.proc.start(n.bin, "-c", n.Conf, "-a", "127.0.0.1", "-s", strconv.Itoa(n.statsPort))
	if err != nil {
		return err
	}
	return n.proc.waitReady(nutcrackerReadyTimeout, 10*time.Millisecond, func() bool {
		c, err := net.DialTimeout("tcp", n.Addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// Restart stops nutcracker with SIGTERM and starts it again on the same
// config file, which it reads anew: the way an operator applies a changed
// config, since nutcracker has no reload.
func (n *Nutcracker) Restart(t testing.TB) {
	t.Helper()
	if err := n.proc.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("testenv: stopping nutcracker: %v", err)
	}
	if err := n.start(); err != nil {
		t.Fatalf("testenv: restarting nutcracker on %s: %v\n%s", n.Conf, err, n.proc.tail(20))
	}
}
