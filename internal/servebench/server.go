package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is an `akunu serve` subprocess: its own process, so that nothing
// of servebench but the HTTP client shares its address space or its Go
// scheduler.
type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *tail
	exited chan struct{} // closed when the process has ended
	err    error         // Wait's, once exited is closed
	once   sync.Once
}

// startServer starts akunu serve on a free port with parallel slots and
// waits for the URL it prints on its first line of stdout.
func startServer(ctx context.Context, akunu, plan string, parallel, threads int) (*server, error) {
	args := []string{"serve", plan, "--port", "0", "--parallel", strconv.Itoa(parallel)}
	if threads > 0 {
		args = append(args, "--threads", strconv.Itoa(threads))
	}
	s := &server{cmd: exec.Command(akunu, args...), stderr: &tail{max: 16 << 10}, exited: make(chan struct{})}
	urlc := make(chan string, 1)
	s.cmd.Stdout = &firstLine{c: urlc}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.url = <-urlc:
		return s, nil
	case <-s.exited:
		return nil, s.dead()
	case <-time.After(2 * time.Minute):
		s.stop()
		return nil, fmt.Errorf("%s: printed no URL in 2 minutes\n%s", s.cmdline(), s.stderr.lines(20))
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

func (s *server) cmdline() string { return strings.Join(s.cmd.Args, " ") }

// dead is nil while the server runs, else what it left on stderr.
func (s *server) dead() error { return s.deadWithin(0) }

// deadWithin is dead, after waiting up to d for the server to exit: a
// request can fail on its dropped connection before the exit is seen.
func (s *server) deadWithin(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited (%v); its stderr ends:\n%s", s.cmdline(), s.err, s.stderr.lines(20))
	case <-t.C:
		return nil
	}
}

// stop sends SIGTERM and waits for the server to drain and exit (SIGKILL
// after 30 s). Its error is the server's, if it exited badly.
func (s *server) stop() error {
	var err error
	s.once.Do(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
				err = fmt.Errorf("%s: still running 30 s after SIGTERM; killed", s.cmdline())
				return
			}
		}
		if s.err != nil {
			err = fmt.Errorf("%s: %v; its stderr ends:\n%s", s.cmdline(), s.err, s.stderr.lines(20))
		}
	})
	return err
}

// firstLine sends the first line written to it, trimmed, and drops the
// rest.
type firstLine struct {
	buf  []byte
	c    chan<- string
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if !f.sent {
		f.buf = append(f.buf, p...)
		if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
			f.c <- strings.TrimSpace(string(f.buf[:i]))
			f.sent, f.buf = true, nil
		}
	}
	return len(p), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lines is the last n lines, indented.
func (t *tail) lines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return "    " + strings.Join(ls, "\n    ")
}
