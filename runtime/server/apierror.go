package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// apiError is an error in OpenAI's shape: the HTTP status, and the body
// {"error":{"message","type","param","code"}}.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string // the request field at fault, "" for none
	Code    string // "" for none
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Message }

// Error types, as OpenAI names them.
const (
	typeInvalid     = "invalid_request_error"
	typeAuth        = "authentication_error"
	typeNotFound    = "not_found_error"
	typeRateLimit   = "rate_limit_error"
	typeServer      = "server_error"
	typeUnavailable = "unavailable_error"
)

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

func unavailable(retry time.Duration, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, RetryAfter: retry, Message: fmt.Sprintf(format, args...)}
}

func serverError(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: typeServer, Message: err.Error()}
}

// writeError sends e.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	body := struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}{}
	body.Error.Message, body.Error.Type = e.Message, e.Type
	if e.Param != "" {
		body.Error.Param = &e.Param
	}
	if e.Code != "" {
		body.Error.Code = &e.Code
	}
	writeJSON(w, e.Status, body)
}

// writeJSON sends v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"the response could not be encoded","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
