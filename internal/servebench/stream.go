package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// request is one streamed completion: what was asked, and when each part
// of the answer arrived. Times are milliseconds: SentMS from the round's
// start, the others from SentMS.
type request struct {
	ID           int     `json:"id"`
	PromptTokens int     `json:"prompt_tokens"`
	SentMS       float64 `json:"sent_ms"`
	// ChunkMS: each chunk with text (ChunkMS[0] is the time to first
	// token); ChunkBytes its text's length.
	ChunkMS    []float64 `json:"chunk_ms"`
	ChunkBytes []int     `json:"chunk_bytes"`
	DoneMS     float64   `json:"done_ms"`
	Finish     string    `json:"finish_reason"`
	// The final chunk's timings (the server's own clock).
	PromptN     int     `json:"prompt_n"`
	PromptMSrv  float64 `json:"server_prompt_ms"`
	Predicted   int     `json:"predicted_n"`
	PredictMSrv float64 `json:"server_predicted_ms"`
	// GapsMS are the inter-token gaps drawn from the chunks (tokenGaps);
	// SharedTokens the tokens that came in a chunk behind another.
	GapsMS       []float64 `json:"gaps_ms"`
	SharedTokens int       `json:"shared_chunk_tokens"`
}

// sseReader reads server-sent events: "data:" lines, joined by newlines,
// make an event that a blank line ends; comments and other fields are
// skipped. Each event is stamped with now() when its blank line was read,
// which is when the client could have acted on it.
type sseReader struct {
	r   *bufio.Reader
	now func() time.Time
}

func newSSEReader(r io.Reader, now func() time.Time) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), now: now}
}

// next returns the next event's data; io.EOF at the end of the stream
// (an event cut short by the end is dropped).
func (s *sseReader) next() ([]byte, time.Time, error) {
	var data []byte
	have := false
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, time.Time{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if have {
				return data, s.now(), nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // a comment (":..."), or event:, id:, retry:
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if have {
			data = append(data, '\n')
		}
		data, have = append(data, value...), true
	}
}

// completionChunk is what servebench reads of a /v1/completions chunk.
type completionChunk struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Timings *struct {
		PromptN     int     `json:"prompt_n"`
		PromptMS    float64 `json:"prompt_ms"`
		PredictedN  int     `json:"predicted_n"`
		PredictedMS float64 `json:"predicted_ms"`
	} `json:"timings"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// readCompletion reads a completion's event stream into q, with times from
// sent, until [DONE].
func readCompletion(r io.Reader, now func() time.Time, sent time.Time, q *request) error {
	s := newSSEReader(r, now)
	for n := 0; ; n++ {
		data, at, err := s.next()
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return fmt.Errorf("the stream ended after %d events without [DONE]", n)
			}
			return err
		}
		if string(data) == "[DONE]" {
			q.DoneMS = ms(at.Sub(sent))
			if q.Finish == "" {
				return errors.New("[DONE] came without a chunk giving finish_reason")
			}
			return nil
		}
		var c completionChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("event %d: %v: %.200s", n, err, data)
		}
		if c.Error != nil {
			return fmt.Errorf("event %d: the server ended the stream with an error (%s): %s", n, c.Error.Type, c.Error.Message)
		}
		for _, ch := range c.Choices {
			if ch.Text != "" {
				q.ChunkMS = append(q.ChunkMS, ms(at.Sub(sent)))
				q.ChunkBytes = append(q.ChunkBytes, len(ch.Text))
			}
			if ch.FinishReason != nil {
				q.Finish = *ch.FinishReason
			}
		}
		if t := c.Timings; t != nil {
			q.PromptN, q.PromptMSrv, q.Predicted, q.PredictMSrv = t.PromptN, t.PromptMS, t.PredictedN, t.PredictedMS
		}
	}
}

// completionBody is the request: greedy (temperature 0, so the text and
// the work are the same every run), tokens ids as the prompt (exactly its
// length, and no BOS added), ignore_eos so every stream runs max_tokens.
type completionBody struct {
	Model       string  `json:"model"`
	Prompt      []int32 `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	IgnoreEOS   bool    `json:"ignore_eos"`
	Stream      bool    `json:"stream"`
}

// complete sends one streaming completion and reads it into q; q.SentMS is
// set from start, the round's start.
func complete(ctx context.Context, c *http.Client, base string, body completionBody, start time.Time, q *request) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	sent := time.Now()
	q.SentMS = ms(sent.Sub(start))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("POST /v1/completions: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := readCompletion(resp.Body, time.Now, sent, q); err != nil {
		return fmt.Errorf("POST /v1/completions: %w", err)
	}
	q.GapsMS, q.SharedTokens = tokenGaps(q.ChunkMS, q.Predicted)
	return nil
}
