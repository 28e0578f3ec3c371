package sdnlb

import (
	"errors"
	"fmt"
)

// Error codes. They are stable strings: the API puts them in error bodies and
// maps each to an HTTP status.
const (
	ECONFLICT     = "conflict"            // a uniqueness rule or a dependant blocks the write
	EINTERNAL     = "internal"            // a bug or an unavailable dependency
	EINVALID      = "invalid"             // the input breaks a validation rule
	ENOTFOUND     = "not_found"           // the object, or one it references, does not exist
	EUNAUTHORIZED = "unauthorized"        // a write without the configured bearer token
	EFORBIDDEN    = "forbidden"           // a request from a browser page or host name the API does not trust
	EUNAVAILABLE  = "unavailable"         // e.g. no switch is connected for the request
	ETOOLARGE     = "too_large"           // a request body over the limit
	EUNSUPPORTED  = "unsupported"         // e.g. a content type the API does not read
	EPRECONDITION = "precondition_failed" // an If-Match the object no longer satisfies
)

// Error is the one error type of the domain. Field names the input field at
// fault, in the JSON spelling of the native API, when there is one.
type Error struct {
	Code    string
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("sdnlb error: code=%s field=%s message=%s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("sdnlb error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an *Error that names the field at fault.
func FieldErrorf(code, field string, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the *Error in err's chain, EINTERNAL for any
// other error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the *Error in err's chain; other errors
// are internal and get a generic message so their details never leak.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrorField returns the field named by the *Error in err's chain, if any.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
