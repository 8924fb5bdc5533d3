// Command gonormalize is the Go side of `make bench`: the core-agent dialect's mapping of
// envelopes (JSONL on stdin) to canonical event lines with encoding/json, written for the
// bench from SPEC.md's rules (defaults, mapped fields, token counts, file_path). It does only
// what the bench's two logs need; bench.py checks that its bytes equal `sciontool normalize`'s.
package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"os"
)

type eventData struct {
	Prompt           string `json:"prompt,omitempty"`
	ToolName         string `json:"tool_name,omitempty"`
	Message          string `json:"message,omitempty"`
	Reason           string `json:"reason,omitempty"`
	Source           string `json:"source,omitempty"`
	SessionID        string `json:"session_id,omitempty"`
	ToolInput        string `json:"tool_input,omitempty"`
	ToolOutput       string `json:"tool_output,omitempty"`
	FilePath         string `json:"file_path,omitempty"`
	InputTokens      int64  `json:"input_tokens,omitempty"`
	OutputTokens     int64  `json:"output_tokens,omitempty"`
	CachedTokens     int64  `json:"cached_tokens,omitempty"`
	CacheWriteTokens int64  `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64  `json:"reasoning_tokens,omitempty"`
	Model            string `json:"model,omitempty"`
	AssistantText    string `json:"assistant_text,omitempty"`
	Success          bool   `json:"success,omitempty"`
	Error            string `json:"error,omitempty"`
}

type event struct {
	Name    string    `json:"name"`
	RawName string    `json:"raw_name,omitempty"`
	Dialect string    `json:"dialect,omitempty"`
	Data    eventData `json:"data"`
}

// core-agent maps every event to itself; these carry a payload by path.
var payloadField = map[string]string{"tool-start": "tool_input", "tool-end": "tool_output"}

func str(m map[string]interface{}, key string) string {
	s, _ := m[key].(string)
	return s
}

func marshalled(v interface{}) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func token(v interface{}) int64 {
	f, ok := v.(float64)
	if !ok || f <= -9.3e18 || f >= 9.3e18 {
		return 0
	}
	if n := int64(f); n > 0 && n <= math.MaxInt64 {
		return n
	}
	return 0
}

func takeTokens(d *eventData, m map[string]interface{}) {
	for _, t := range []struct {
		field       *int64
		name, other string
	}{
		{&d.InputTokens, "input_tokens", "prompt_tokens"},
		{&d.OutputTokens, "output_tokens", "completion_tokens"},
		{&d.CachedTokens, "cached_tokens", "cache_read_input_tokens"},
	} {
		if n := token(m[t.name]); n > 0 {
			*t.field = n
		} else if *t.field == 0 {
			*t.field = token(m[t.other])
		}
	}
}

func toEvent(m map[string]interface{}) event {
	name := str(m, "hook_event_name")
	d := eventData{
		Prompt: str(m, "prompt"), ToolName: str(m, "tool_name"), Message: str(m, "message"),
		Reason: str(m, "reason"), Source: str(m, "source"), SessionID: str(m, "session_id"),
		ToolInput: str(m, "tool_input"), ToolOutput: str(m, "tool_output"), Error: str(m, "error"),
	}
	d.Success, _ = m["success"].(bool)
	switch payloadField[name] {
	case "tool_input":
		if v, ok := m["tool_input"]; ok && v != nil {
			d.ToolInput = marshalled(v)
		}
	case "tool_output":
		if v, ok := m["tool_output"]; ok && v != nil {
			d.ToolOutput = marshalled(v)
		}
	}
	takeTokens(&d, m)
	if usage, ok := m["usage"].(map[string]interface{}); ok && d.InputTokens == 0 && d.OutputTokens == 0 {
		takeTokens(&d, usage)
	}
	if in, ok := m["tool_input"].(map[string]interface{}); ok && str(in, "file_path") != "" {
		d.FilePath = str(in, "file_path")
	} else if d.FilePath = str(m, "file_path"); d.FilePath == "" {
		if resp, ok := m["tool_response"].(map[string]interface{}); ok {
			if d.FilePath = str(resp, "filePath"); d.FilePath == "" {
				d.FilePath = str(resp, "file_path")
			}
		}
	}
	return event{Name: name, RawName: name, Dialect: "core-agent", Data: d}
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer out.Flush()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m map[string]interface{}
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				os.Stderr.WriteString("gonormalize: " + jerr.Error() + "\n")
				os.Exit(1)
			}
			b, _ := json.Marshal(toEvent(m))
			out.Write(append(b, '\n'))
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			os.Stderr.WriteString("gonormalize: " + err.Error() + "\n")
			os.Exit(1)
		}
	}
}
