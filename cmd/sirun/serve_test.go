package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const tinyTemplate = "../../testdata/chat/tiny_template.jinja"

// TestChatCommand: turns from stdin, streamed answers, /reset, and the
// timing summary; a later turn prefills only itself.
func TestChatCommand(t *testing.T) {
	in := "In the beginning\nAnd then?\n/reset\nIn the beginning\n"
	out, errOut, code := run(t, in, "chat", pack, "--chat-template", tinyTemplate, "--temp", "0", "-n", "16", "--system", "Be brief.")
	if code != 0 {
		t.Fatalf("chat exit %d:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] == "" || lines[0] != lines[2] {
		t.Fatalf("want 3 answers, the first and the last (after /reset) equal; got %q", lines)
	}
	m := regexp.MustCompile(`prompt eval = +[0-9.]+ ms / +(\d+) tokens`).FindStringSubmatch(errOut)
	if m == nil || !strings.Contains(errOut, "(conversation reset)") || !strings.Contains(errOut, "3 turns") {
		t.Fatalf("no summary or reset note:\n%s", errOut)
	}
	// Without -n a turn stops where sirun does by default, not at the end
	// of the context (the tiny model never ends its turn).
	_, errOut, code = run(t, "In the beginning\n", "chat", pack, "--chat-template", tinyTemplate, "--temp", "0")
	m = regexp.MustCompile(`sirun: +eval = +[0-9.]+ ms / +(\d+) tokens`).FindStringSubmatch(errOut)
	if code != 0 || m == nil || m[1] != strconv.Itoa(defaultPredict) {
		t.Fatalf("chat without -n (%d): want %d tokens generated:\n%s", code, defaultPredict, errOut)
	}
	// Without a template the chat is refused by name.
	if _, errOut, code := run(t, "hi\n", "chat", pack); code == 0 || !strings.Contains(errOut, "no chat template") {
		t.Fatalf("chat without a template: exit %d, %s", code, errOut)
	}
}

// TestServeCommand: sirun serve answers on the port it prints, refuses a
// public address without a key, serves its model under the pack's file
// name with or without .sip and no other (logging the refusal), and exits 0
// on SIGTERM.
func TestServeCommand(t *testing.T) {
	if _, errOut, code := run(t, "", "serve", pack, "--host", "0.0.0.0", "--port", "0"); code == 0 || !strings.Contains(errOut, "--api-key") {
		t.Fatalf("serve on 0.0.0.0 without a key: exit %d, %s", code, errOut)
	}
	cmd := exec.Command(bin, "serve", pack, "--port", "0", "--chat-template", tinyTemplate, "--parallel", "2", "--threads", "2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("serve printed no address")
	}
	rest := make(chan string)
	go func() { b, _ := io.ReadAll(stderr); rest <- string(b) }()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages": [{"role": "user", "content": "In the beginning"}], "max_tokens": 8, "temperature": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(r.Choices) != 1 || r.Choices[0].Message.Content == "" {
		t.Fatalf("chat completion: %d %+v", resp.StatusCode, r)
	}
	for _, c := range []struct {
		model  string
		status int
	}{{"tiny", 200}, {"tiny.sip", 200}, {"gpt-4o", 404}} {
		resp, err := http.Post(url+"/v1/completions", "application/json",
			strings.NewReader(`{"model": "`+c.model+`", "prompt": "In the beginning", "max_tokens": 1}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("model %q: %d %s, want %d", c.model, resp.StatusCode, body, c.status)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	log := <-rest
	if err != nil || !strings.Contains(log, "stopped") {
		t.Fatalf("after SIGTERM: %v\n%s", err, log)
	}
	if !strings.Contains(log, "POST /v1/completions: status 404, ") || !strings.Contains(log, "The model `gpt-4o` does not exist") {
		t.Fatalf("no log line for the refused model:\n%s", log)
	}
}
