package report

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// chromiumPath returns Debian's headless-capable Chromium, or skips the test
// (fails when CI is set: CI must run the browser check).
func chromiumPath(t *testing.T) string {
	t.Helper()
	const path = "/usr/bin/chromium" // testenv.NeedChromium names it
	_, err := os.Stat(path)
	testenv.NeedChromium.Require(t, err == nil)
	return path
}

// cdp is a minimal Chrome DevTools Protocol client over
// --remote-debugging-pipe (messages are JSON terminated by a NUL byte; the
// browser reads fd 3 and writes fd 4).
type cdp struct {
	w      *os.File
	mu     sync.Mutex
	nextID int
	wait   map[int]chan cdpMsg
	events chan cdpMsg
	done   chan struct{}
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startChromium starts a headless browser with a private profile and
// returns a CDP client; the browser is stopped when the test ends.
func startChromium(t *testing.T, ctx context.Context) *cdp {
	t.Helper()
	bin := chromiumPath(t)
	toBrowserR, toBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromBrowserR, fromBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowserR, fromBrowserW} // fd 3, fd 4
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	toBrowserR.Close()
	fromBrowserW.Close()
	c := &cdp{w: toBrowserW, wait: map[int]chan cdpMsg{}, events: make(chan cdpMsg, 256), done: make(chan struct{})}
	go c.read(fromBrowserR)
	t.Cleanup(func() {
		// Ask politely, then make sure it is gone.
		_, _ = c.call(context.Background(), "", "Browser.close", nil)
		toBrowserW.Close()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return c
}

func (c *cdp) read(r *os.File) {
	defer close(c.done)
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMsg
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.wait[m.ID]
			delete(c.wait, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case c.events <- m:
		default: // events nobody reads are dropped
		}
	}
}

// call sends a command (on a session when sessionID is set) and waits for its answer.
func (c *cdp) call(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMsg, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: browser closed the pipe", method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// pageProblems collects console errors, uncaught exceptions and log errors.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *pageProblems) add(s string) {
	p.mu.Lock()
	p.list = append(p.list, s)
	p.mu.Unlock()
}

func (p *pageProblems) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.list...)
}

// openPage creates a tab, enables the console domains, navigates to url and
// waits for the load event. Problems seen on the page are collected until
// the test ends.
func (c *cdp) openPage(t *testing.T, ctx context.Context, url string) (session string, problems *pageProblems) {
	t.Helper()
	res, err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &target)
	res, err = c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &att)
	session = att.SessionID
	problems = &pageProblems{}
	loaded := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case m := <-c.events:
				if m.SessionID != session {
					continue
				}
				switch m.Method {
				case "Page.loadEventFired":
					select {
					case loaded <- struct{}{}:
					default:
					}
				case "Runtime.consoleAPICalled":
					var p struct {
						Type string            `json:"type"`
						Args []json.RawMessage `json:"args"`
					}
					_ = json.Unmarshal(m.Params, &p)
					if p.Type == "error" || p.Type == "assert" {
						problems.add(fmt.Sprintf("console.%s: %s", p.Type, m.Params))
					}
				case "Runtime.exceptionThrown":
					problems.add("exception: " + string(m.Params))
				case "Log.entryAdded":
					var p struct {
						Entry struct {
							Level string `json:"level"`
							Text  string `json:"text"`
							URL   string `json:"url"`
						} `json:"entry"`
					}
					_ = json.Unmarshal(m.Params, &p)
					if p.Entry.Level == "error" {
						problems.add(fmt.Sprintf("log error: %s %s", p.Entry.Text, p.Entry.URL))
					}
				}
			case <-c.done:
				return
			}
		}
	}()
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if _, err := c.call(ctx, session, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.call(ctx, session, "Page.navigate", map[string]any{"url": url}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-loaded:
	case <-ctx.Done():
		t.Fatalf("page %s did not load: %v", url, ctx.Err())
	}
	return session, problems
}

// eval runs a JavaScript expression (awaiting a returned promise) and
// decodes its JSON-serialisable value into out.
func (c *cdp) eval(ctx context.Context, session, expr string, out any) error {
	res, err := c.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if len(r.ExceptionDetails) > 0 {
		return fmt.Errorf("evaluate: %s", r.ExceptionDetails)
	}
	return json.Unmarshal(r.Result.Value, out)
}
