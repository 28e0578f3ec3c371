package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/sdnlb/sdnlb"
)

// codeMethodNotAllowed is the one error code that is not a domain code: only
// the router knows which methods a path takes.
const codeMethodNotAllowed = "method_not_allowed"

var errMethodNotAllowed = errors.New("method not allowed")

var statusByCode = map[string]int{
	sdnlb.EINVALID:      http.StatusBadRequest,
	sdnlb.EUNAUTHORIZED: http.StatusUnauthorized,
	sdnlb.EFORBIDDEN:    http.StatusForbidden,
	sdnlb.ENOTFOUND:     http.StatusNotFound,
	sdnlb.ECONFLICT:     http.StatusConflict,
	sdnlb.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	sdnlb.EUNSUPPORTED:  http.StatusUnsupportedMediaType,
	sdnlb.EUNAVAILABLE:  http.StatusServiceUnavailable,
	sdnlb.EPRECONDITION: http.StatusPreconditionFailed,
	sdnlb.EINTERNAL:     http.StatusInternalServerError,
}

// errorResponse is the body of every error.
type errorResponse struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code" example:"invalid"`
	Message string `json:"message" example:"port must be 1-65535 for TCP, not 0"`
	Field   string `json:"field,omitempty" example:"port"`
}

// writeError is the only place that turns an error into a response. Internal
// errors are logged with their details and answered with a generic message
// and the request id, so nothing about the store leaks to clients.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errMethodNotAllowed) {
		writeJSONQuiet(w, http.StatusMethodNotAllowed, errorResponse{Error: errorBody{
			Code: codeMethodNotAllowed, Message: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path),
		}})
		return
	}
	code := sdnlb.ErrorCode(err)
	status, ok := statusByCode[code]
	if !ok {
		code, status = sdnlb.EINTERNAL, http.StatusInternalServerError
	}
	body := errorBody{Code: code, Message: sdnlb.ErrorMessage(err), Field: sdnlb.ErrorField(err)}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sdnlb"`)
	}
	if code == sdnlb.EINTERNAL {
		reqID := middleware.GetReqID(r.Context())
		s.logger().Error("request failed", "component", "api", "method", r.Method, "path", r.URL.Path,
			"request_id", reqID, "err", err)
		body = errorBody{Code: code, Message: "internal error; request id " + reqID}
	}
	writeJSONQuiet(w, status, errorResponse{Error: body})
}

// writeJSON writes v with the status. The only error is a failed write to
// the client, which nobody can answer any more.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	writeJSONQuiet(w, status, v)
	return nil
}

func writeJSONQuiet(w http.ResponseWriter, status int, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		// Only a bug can get here: every response type marshals.
		status = http.StatusInternalServerError
		buf = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(buf, '\n'))
}
