package sinter

/*
#include <stdlib.h>
#include <sinter/sinter.h>
*/
import "C"

import (
	"errors"
	"fmt"
)

// Code is an error code of the C API (sn_code).
type Code uint32

// Error codes.
const (
	CodeOK          Code = C.SN_OK
	CodeInvalidArg  Code = C.SN_E_INVALID_ARG
	CodeUnsupported Code = C.SN_E_UNSUPPORTED
	CodeCompile     Code = C.SN_E_COMPILE
	CodeDevice      Code = C.SN_E_DEVICE
	CodeOutOfMemory Code = C.SN_E_OUT_OF_MEMORY
	CodeVersion     Code = C.SN_E_VERSION
	CodeNotFound    Code = C.SN_E_NOT_FOUND
	CodeInternal    Code = C.SN_E_INTERNAL
)

var codeNames = map[Code]string{
	CodeOK: "OK", CodeInvalidArg: "INVALID_ARG", CodeUnsupported: "UNSUPPORTED", CodeCompile: "COMPILE",
	CodeDevice: "DEVICE", CodeOutOfMemory: "OUT_OF_MEMORY", CodeVersion: "VERSION", CodeNotFound: "NOT_FOUND",
	CodeInternal: "INTERNAL",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Code(%d)", uint32(c))
}

// Error is a failed call: the C API's code and message. The message names the function, the rule and the
// values, e.g. "sn_uop_reshape: Reshape: element count changes: (2,3) to (4,2)".
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("sinter: %s (%s)", e.Message, e.Code) }

// Is makes errors.Is(err, &sinter.Error{Code: sinter.CodeInvalidArg}) match by code alone.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Message == "" && t.Code == e.Code
}

// ErrClosed is returned by calls on a Context or Graph after Close (and on UOps of a closed Graph).
var ErrClosed = &Error{Code: CodeInvalidArg, Message: "use after Close"}

var errZero = &Error{Code: CodeInvalidArg, Message: "the zero UOp is no node"}

// takeError turns a C error into an *Error and frees it. cerr must be non-nil.
func takeError(cerr *C.sn_error) error {
	e := &Error{Code: Code(C.sn_error_code(cerr)), Message: C.GoString(C.sn_error_message(cerr))}
	C.sn_error_free(cerr)
	return e
}

// check converts the error slot of one C call: nil when the call succeeded.
func check(cerr *C.sn_error) error {
	if cerr != nil {
		return takeError(cerr)
	}
	return nil
}

// checkCode is check for calls that return sn_code.
func checkCode(code C.sn_code, cerr *C.sn_error) error {
	if cerr != nil {
		return takeError(cerr)
	}
	if code != C.SN_OK {
		return &Error{Code: Code(code), Message: "the C API failed without an error message"}
	}
	return nil
}

// takeString copies a string the library returned and frees it with sn_string_free.
func takeString(s *C.char) string {
	if s == nil {
		return ""
	}
	defer C.sn_string_free(s)
	return C.GoString(s)
}

// Version is the library's version string, e.g. "0.1.0".
func Version() string { return C.GoString(C.sn_version_string()) }

// VersionNumber is the library's MAJOR*10000 + MINOR*100 + PATCH; compare with HeaderVersion.
func VersionNumber() uint32 { return uint32(C.sn_version_number()) }

// HeaderVersion is the version of the sinter.h this package was compiled against.
const HeaderVersion uint32 = C.SN_VERSION_NUMBER
