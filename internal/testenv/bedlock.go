package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
)

// bedCount is how many /24s 198.18.0.0/15 holds, so how many beds can live
// on one machine at a time.
const bedCount = 512

// bedLockDir holds one lock file per /24, bed-<index>.lock. A bed holds an
// exclusive flock on its file for as long as it lives; the kernel releases
// it when the owning process dies, however it dies, so a lock that can be
// taken marks the names of that index as leftovers of a dead run.
const bedLockDir = "/run/mcrib-testenv"

// netnsDir is where ip keeps the named network namespaces.
const netnsDir = "/run/netns"

// errNoFreeBed is returned when all 512 /24s are held by live beds.
var errNoFreeBed = errors.New("testenv: every test bed network is in use")

// errBedLeftovers is returned when a bed's names are still there after
// they were removed.
var errBedLeftovers = errors.New("testenv: test bed names left after removal")

// The names a bed creates all carry its index, so that leftovers can be
// told apart by bed: the bridge mcrb<index> and root-side veths
// mcr<index>h<host> (at most 10 characters; Linux allows 15) and the
// namespaces mcrib-<index>-<host name>.
var (
	bridgeRE = regexp.MustCompile(`^mcrb([0-9]+)$`)
	vethRE   = regexp.MustCompile(`^mcr([0-9]+)h[0-9]+$`)
	netnsRE  = regexp.MustCompile(`^mcrib-([0-9]+)-`)
)

// bridgeName returns the name of the bridge of bed index.
func bridgeName(index int) string { return fmt.Sprintf("mcrb%d", index) }

// vethName returns the root-side name of the veth pair of host number host
// (counting from 0) of bed index. The other side is eth0 in the host.
func vethName(index, host int) string { return fmt.Sprintf("mcr%dh%d", index, host) }

// netnsName returns the network namespace name of host name of bed index.
func netnsName(index int, name string) string { return fmt.Sprintf("mcrib-%d-%s", index, name) }

// lockBed takes the lock of a free /24, trying the index derived from the
// process ID first so that concurrent test binaries rarely contend, and
// returns its index and the open lock file (close it to release the lock).
func lockBed() (int, *os.File, error) {
	if err := os.MkdirAll(bedLockDir, 0o755); err != nil {
		return 0, nil, fmt.Errorf("creating %s: %w", bedLockDir, err)
	}
	start := os.Getpid() % bedCount
	for i := range bedCount {
		index := (start + i) % bedCount
		f, err := tryLockBed(index)
		if err != nil {
			return 0, nil, err
		}
		if f != nil {
			// For people: which process holds the bed.
			f.Truncate(0)
			fmt.Fprintf(f, "%d\n", os.Getpid())
			return index, f, nil
		}
	}
	return 0, nil, errNoFreeBed
}

// tryLockBed takes the lock of bed index without waiting. It returns nil and
// no error when another open file holds it (a live bed, in this process or
// another).
func tryLockBed(index int) (*os.File, error) {
	path := filepath.Join(bedLockDir, fmt.Sprintf("bed-%d.lock", index))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of test bed %d: %w", index, err)
	}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return f, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, nil
	default:
		f.Close()
		return nil, fmt.Errorf("locking test bed %d: %w", index, err)
	}
}

// sweepDeadBeds removes the bridges, veths and namespaces of every bed
// whose lock nobody holds: leftovers of test binaries that died before
// their cleanups ran. Beds of live processes are left alone.
func sweepDeadBeds(ip string) error {
	if err := os.MkdirAll(bedLockDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", bedLockDir, err)
	}
	indexes, err := leftoverIndexes()
	if err != nil {
		return err
	}
	var errs []error
	for _, index := range indexes {
		f, err := tryLockBed(index)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f == nil {
			continue // a live bed
		}
		errs = append(errs, purgeBed(ip, index))
		f.Close()
	}
	return errors.Join(errs...)
}

// leftoverIndexes returns the indexes of every bed that has a name on the
// machine, sorted.
func leftoverIndexes() ([]int, error) {
	links, namespaces, err := allBedNames()
	if err != nil {
		return nil, err
	}
	var indexes []int
	for _, name := range append(links, namespaces...) {
		if index, ok := bedIndexOf(name); ok && !slices.Contains(indexes, index) {
			indexes = append(indexes, index)
		}
	}
	slices.Sort(indexes)
	return indexes, nil
}

// bedIndexOf returns the index of the bed that name (a link or namespace
// name) belongs to.
func bedIndexOf(name string) (int, bool) {
	for _, re := range []*regexp.Regexp{bridgeRE, vethRE, netnsRE} {
		if m := re.FindStringSubmatch(name); m != nil {
			index, err := strconv.Atoi(m[1])
			return index, err == nil
		}
	}
	return 0, false
}

// allBedNames returns the names of the links in the root namespace and of
// the named network namespaces that look like a bed's.
func allBedNames() (links, namespaces []string, err error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, nil, fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, iface := range ifaces {
		if bridgeRE.MatchString(iface.Name) || vethRE.MatchString(iface.Name) {
			links = append(links, iface.Name)
		}
	}
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("listing network namespaces: %w", err)
	}
	for _, e := range entries {
		if netnsRE.MatchString(e.Name()) {
			namespaces = append(namespaces, e.Name())
		}
	}
	return links, namespaces, nil
}

// bedNames returns the links and namespaces of bed index, veths before the
// bridge.
func bedNames(index int) (links, namespaces []string, err error) {
	allLinks, allNamespaces, err := allBedNames()
	if err != nil {
		return nil, nil, err
	}
	var bridges []string
	for _, name := range allLinks {
		if i, _ := bedIndexOf(name); i != index {
			continue
		}
		if bridgeRE.MatchString(name) {
			bridges = append(bridges, name)
		} else {
			links = append(links, name)
		}
	}
	for _, name := range allNamespaces {
		if i, _ := bedIndexOf(name); i == index {
			namespaces = append(namespaces, name)
		}
	}
	return append(links, bridges...), namespaces, nil
}

// purgeBed deletes every link and namespace of bed index and checks that
// none is left. Deleting the root side of a veth pair deletes both sides at
// once; a process still running in a namespace keeps that namespace alive
// (unnamed) until it exits, but without its link it is cut off.
func purgeBed(ip string, index int) error {
	links, namespaces, err := bedNames(index)
	if err != nil {
		return err
	}
	var lines []string
	for _, l := range links {
		lines = append(lines, "link del "+l)
	}
	for _, n := range namespaces {
		lines = append(lines, "netns del "+n)
	}
	batchErr := runIPBatch(ip, nil, lines)
	links, namespaces, err = bedNames(index)
	if err != nil {
		return err
	}
	if len(links)+len(namespaces) > 0 {
		return fmt.Errorf("%w: links %q, namespaces %q (%v)", errBedLeftovers, links, namespaces, batchErr)
	}
	return nil
}
