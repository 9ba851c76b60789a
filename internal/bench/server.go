package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ),
// 100 on every Linux this runs on.
const clockTicks = 100

// ServerConfig starts a gateway as a child process.
type ServerConfig struct {
	// Path and Args are the command (the paygate binary and "serve" with
	// its flags); --addr is added.
	Path string
	Args []string
	Env  []string // the whole environment of the child
	// Log receives the child's stdout and stderr.
	Log io.Writer
	// ReadyTimeout bounds the wait for /readyz; default 60s.
	ReadyTimeout time.Duration
}

// Server is a gateway running as a child process.
type Server struct {
	URL    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of Wait, once exited is closed

	mu      sync.Mutex
	samples []int64 // RSS in bytes, once a second
	stopS   chan struct{}
	sampled sync.WaitGroup
}

// StartServer picks a free loopback port, starts the server on it and waits
// until /readyz answers 200.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Path, append(append([]string(nil), cfg.Args...), "--addr", addr)...)
	cmd.Env = cfg.Env
	// Its own process group: a Ctrl-C in the terminal reaches the load
	// tool, which then stops the server itself after the report's reads.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cfg.Log != nil {
		cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server: %w", err)
	}
	s := &Server{URL: "http://" + addr, cmd: cmd, exited: make(chan struct{}), stopS: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	if err := s.waitReady(ctx, timeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	s.sampled.Add(1)
	go s.sample()
	return s, nil
}

// FreeLoopbackAddr returns 127.0.0.1:PORT with a port that was free a
// moment ago.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	return addr, nil
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("wait for the server: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited before it was ready: %v", s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server was not ready within %s", timeout)
		}
	}
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// CPU returns the CPU time the server has used so far (user + system).
func (s *Server) CPU() (time.Duration, error) { return processCPU(s.Pid()) }

// PeakRSS returns the server's peak resident memory so far (VmHWM).
func (s *Server) PeakRSS() (int64, error) { return procStatusBytes(s.Pid(), "VmHWM:") }

// RSSSamples returns the resident memory sampled once a second so far.
func (s *Server) RSSSamples() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.samples...)
}

func (s *Server) sample() {
	defer s.sampled.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stopS:
			return
		case <-s.exited:
			return
		case <-t.C:
			if v, err := procStatusBytes(s.Pid(), "VmRSS:"); err == nil {
				s.mu.Lock()
				s.samples = append(s.samples, v)
				s.mu.Unlock()
			}
		}
	}
}

// Stop sends SIGTERM, waits up to 30 s for the exit (then kills), and
// returns an error when the server did not exit cleanly.
func (s *Server) Stop() error {
	select {
	case <-s.stopS:
	default:
		close(s.stopS)
	}
	s.sampled.Wait()
	select {
	case <-s.exited:
		return s.exitError()
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return s.exitError()
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("the server did not stop within 30s of SIGTERM; killed")
	}
}

func (s *Server) exitError() error {
	if s.err != nil {
		return fmt.Errorf("the server exited: %w", s.err)
	}
	return nil
}

// processCPU reads utime + stime of /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read process CPU: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU returns utime + stime of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may hold spaces: fields are counted
// after the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("read process CPU: malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// After ')': state is field 3, utime field 14, stime field 15.
	if len(f) < 13 {
		return 0, errors.New("read process CPU: short stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("read process CPU: malformed times")
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procStatusBytes reads a "kB" line of /proc/PID/status, such as VmRSS.
func procStatusBytes(pid int, field string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("read process memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read process memory: %q", line)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("read process memory: no %s", strings.TrimSuffix(field, ":"))
}
