package server

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNPMClients drives one running server with the official npm clients
// (testdata/clients/client.mjs): ollama's (chat, generate, streaming,
// list, show, version, ps, errors) and OpenAI's (models, chat and legacy
// completions plain and streamed, logprobs, stop strings, json_schema
// output, a multi-turn conversation on the prompt cache, error shapes). It
// needs node, and the clients pinned in testdata/clients/package-lock.json,
// installed there by npm ci (done here when they are missing or stale and
// npm can reach its registry; offline, the test skips).
func TestNPMClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	dir, _ := filepath.Abs("../testdata/clients")
	if stale := npmStale(t, dir); stale != "" {
		t.Logf("npm ci in testdata/clients: %s", stale)
		// Bounded: npm retries an unreachable registry for minutes.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm ci in testdata/clients failed (offline?): %v\n%s", err, out)
		}
	}
	ts := startServer(t, Options{Parallel: 1}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", ts.url)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok ") {
		t.Fatalf("client.mjs said nothing: %s", out)
	}
	t.Logf("%s", out)
}

// npmStale says why dir's node_modules does not hold the exact versions
// its package.json pins ("" if it does).
func npmStale(t *testing.T, dir string) string {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range pkg.Dependencies {
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil || json.Unmarshal(b, &got) != nil {
			return name + " is not installed"
		}
		if got.Version != want {
			return name + " is " + got.Version + ", package.json pins " + want
		}
	}
	return ""
}
