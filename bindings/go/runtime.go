package sinter

/*
#include <stdlib.h>
#include <sinter/sinter.h>
*/
import "C"

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ---- devices ----

// Device runs programs ("CPU", "CL", ...) or, for "C", only compiles them to C source. Safe for concurrent
// use; Close must not race with other calls on it.
type Device struct {
	p *C.sn_device
}

// Device opens the device called name ("CPU", "CPU:0", "CL", "CL:1", "C"; "" for the default). An unknown
// or unavailable device is an *Error with CodeDevice naming the device and the reason.
func (c *Context) Device(name string) (*Device, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return nil, ErrClosed
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var cerr *C.sn_error
	p := C.sn_device_open(c.p, cname, &cerr)
	runtime.KeepAlive(c)
	return newDevice(p, cerr)
}

func newDevice(p *C.sn_device, cerr *C.sn_error) (*Device, error) {
	if err := check(cerr); err != nil {
		return nil, err
	}
	d := &Device{p: p}
	runtime.SetFinalizer(d, (*Device).Close)
	return d, nil
}

// DeviceTarget opens a compile-only device for architecture arch of GPU backend backend: ("CUDA", "sm_90")
// makes PTX, ("AMD", "gfx942") AMDGPU code objects, without the driver or a GPU. Programs compile for it
// (KernelSource, KernelBinary) but running one fails with CodeDevice. A backend that cannot is CodeDevice, an
// unknown arch CodeInvalidArg, each named. (API version 8.)
func (c *Context) DeviceTarget(backend, arch string) (*Device, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return nil, ErrClosed
	}
	cbackend, carch := C.CString(backend), C.CString(arch)
	defer C.free(unsafe.Pointer(cbackend))
	defer C.free(unsafe.Pointer(carch))
	var cerr *C.sn_error
	p := C.sn_device_open_target(c.p, cbackend, carch, &cerr)
	runtime.KeepAlive(c)
	return newDevice(p, cerr)
}

// DeviceCount is how many devices backend ("CPU", "CL", "C") has on this machine: 0 when its driver or
// hardware is missing (Device then says why). A backend this build lacks is an *Error with CodeNotFound.
func (c *Context) DeviceCount(backend string) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return 0, ErrClosed
	}
	cbackend := C.CString(backend)
	defer C.free(unsafe.Pointer(cbackend))
	var cerr *C.sn_error
	n := C.sn_device_count(c.p, cbackend, &cerr)
	runtime.KeepAlive(c)
	if err := check(cerr); err != nil {
		return 0, err
	}
	return int(n), nil
}

// SetDebug sets the context's SN_DEBUG level (0 quiet .. 5 linearized UOps, printed to stderr).
func (c *Context) SetDebug(level int) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return ErrClosed
	}
	var cerr *C.sn_error
	code := C.sn_context_set_debug(c.p, C.int(level), &cerr)
	runtime.KeepAlive(c)
	return checkCode(code, cerr)
}

// SetDiskCache sets whether the context's devices keep compiled kernels and BEAM results in the disk cache
// ($SN_CACHE_DIR, else $XDG_CACHE_HOME/sinter, else ~/.cache/sinter). On by default; SN_CACHE=0 turns it off
// for the whole process. Applies to devices open now and later. (API version 6.)
func (c *Context) SetDiskCache(enabled bool) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return ErrClosed
	}
	var cerr *C.sn_error
	code := C.sn_context_set_disk_cache(c.p, C.int(cbool(enabled)), &cerr)
	runtime.KeepAlive(c)
	return checkCode(code, cerr)
}

// Close releases the device (buffers and programs keep it alive as long as they need it). Idempotent.
func (d *Device) Close() error {
	if d.p != nil {
		C.sn_device_release(d.p)
		d.p = nil
		runtime.SetFinalizer(d, nil)
	}
	return nil
}

// Name is the canonical name, e.g. "CPU".
func (d *Device) Name() string {
	if d.p == nil {
		return ""
	}
	s := C.GoString(C.sn_device_name(d.p, nil))
	runtime.KeepAlive(d)
	return s
}

// Description says what the device is, e.g. the OpenCL device and platform ("pthread-haswell-AMD EPYC
// (Portable Computing Language, OpenCL 3.0 ...)").
func (d *Device) Description() (string, error) {
	if d.p == nil {
		return "", ErrClosed
	}
	var cerr *C.sn_error
	s := takeString(C.sn_device_description(d.p, &cerr))
	runtime.KeepAlive(d)
	return s, check(cerr)
}

// Alloc is a new buffer of dtype and shape on the device (contents undefined).
func (d *Device) Alloc(dtype DType, shape ...int64) (*Buffer, error) {
	if d.p == nil {
		return nil, ErrClosed
	}
	ptr, n := int64s(shape)
	var cerr *C.sn_error
	p := C.sn_buffer_alloc(d.p, C.sn_dtype(dtype), ptr, n, &cerr)
	runtime.KeepAlive(d)
	runtime.KeepAlive(shape)
	if err := check(cerr); err != nil {
		return nil, err
	}
	return newBuffer(p), nil
}

// ---- buffers ----

// Buffer is a typed, shaped block of device memory. Close must not race with other calls on it.
type Buffer struct {
	p *C.sn_buffer
}

func newBuffer(p *C.sn_buffer) *Buffer {
	b := &Buffer{p: p}
	runtime.SetFinalizer(b, (*Buffer).Close)
	return b
}

// Close releases the buffer. Idempotent.
func (b *Buffer) Close() error {
	if b.p != nil {
		C.sn_buffer_release(b.p)
		b.p = nil
		runtime.SetFinalizer(b, nil)
	}
	return nil
}

// DType is the element type (DTypeInvalid after Close).
func (b *Buffer) DType() DType {
	if b.p == nil {
		return DTypeInvalid
	}
	defer runtime.KeepAlive(b)
	return DType(C.sn_buffer_dtype(b.p, nil))
}

// Shape is the buffer's shape.
func (b *Buffer) Shape() []int64 {
	if b.p == nil {
		return nil
	}
	defer runtime.KeepAlive(b)
	rank := int(C.sn_buffer_rank(b.p, nil))
	shape := make([]int64, 0, rank)
	for i := 0; i < rank; i++ {
		shape = append(shape, int64(C.sn_buffer_dim(b.p, C.size_t(i), nil)))
	}
	return shape
}

// NumEl is the number of elements.
func (b *Buffer) NumEl() int64 {
	if b.p == nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return int64(C.sn_buffer_numel(b.p, nil))
}

// NBytes is the size in bytes.
func (b *Buffer) NBytes() int {
	if b.p == nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return int(C.sn_buffer_nbytes(b.p, nil))
}

// DeviceName is the name of the buffer's device.
func (b *Buffer) DeviceName() string {
	if b.p == nil {
		return ""
	}
	defer runtime.KeepAlive(b)
	return C.GoString(C.sn_buffer_device(b.p, nil))
}

// View is a buffer of shape elements starting at element offset that shares b's memory (and keeps it
// alive after b is closed).
func (b *Buffer) View(offset int64, shape ...int64) (*Buffer, error) {
	if b.p == nil {
		return nil, ErrClosed
	}
	ptr, n := int64s(shape)
	var cerr *C.sn_error
	p := C.sn_buffer_view(b.p, C.int64_t(offset), ptr, n, &cerr)
	runtime.KeepAlive(b)
	runtime.KeepAlive(shape)
	if err := check(cerr); err != nil {
		return nil, err
	}
	return newBuffer(p), nil
}

// CopyFrom copies the contents of src into b: the same dtype and element count (the shapes may differ), on
// b's device or another (through host memory). Overlapping views of one buffer are an *Error with
// CodeInvalidArg. Blocks until done.
func (b *Buffer) CopyFrom(src *Buffer) error {
	if b.p == nil {
		return ErrClosed
	}
	if src == nil || src.p == nil {
		return &Error{Code: CodeInvalidArg, Message: "CopyFrom: the source buffer is nil or closed"}
	}
	var cerr *C.sn_error
	code := C.sn_buffer_copy(b.p, src.p, &cerr)
	runtime.KeepAlive(b)
	runtime.KeepAlive(src)
	return checkCode(code, cerr)
}

// Element is a Go type with the layout of a Sinter dtype, for typed copies.
type Element interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

var kindDTypes = map[reflect.Kind]DType{
	reflect.Int8: Int8, reflect.Int16: Int16, reflect.Int32: Int32, reflect.Int64: Int64,
	reflect.Uint8: Uint8, reflect.Uint16: Uint16, reflect.Uint32: Uint32, reflect.Uint64: Uint64,
	reflect.Float32: Float32, reflect.Float64: Float64,
}

// DTypeOf is the dtype whose elements have T's layout.
func DTypeOf[T Element]() DType {
	var zero T
	return kindDTypes[reflect.TypeOf(zero).Kind()]
}

func checkElem[T Element](what string, b *Buffer) error {
	if b.p == nil {
		return ErrClosed
	}
	if dt, want := b.DType(), DTypeOf[T](); dt != want {
		msg := fmt.Sprintf("%s: the buffer holds %s, the slice %s", what, dt, want)
		return &Error{Code: CodeInvalidArg, Message: msg}
	}
	return nil
}

// CopyIn copies data into b; T must match b's dtype and len(data) its element count.
func CopyIn[T Element](b *Buffer, data []T) error {
	if err := checkElem[T]("CopyIn", b); err != nil {
		return err
	}
	var src unsafe.Pointer
	if len(data) > 0 {
		src = unsafe.Pointer(&data[0])
	}
	var cerr *C.sn_error
	code := C.sn_buffer_copy_in(b.p, src, C.size_t(uintptr(len(data))*unsafe.Sizeof(*new(T))), &cerr)
	runtime.KeepAlive(b)
	runtime.KeepAlive(data)
	return checkCode(code, cerr)
}

// CopyOut copies b into out (same rules as CopyIn).
func CopyOut[T Element](b *Buffer, out []T) error {
	if err := checkElem[T]("CopyOut", b); err != nil {
		return err
	}
	var dst unsafe.Pointer
	if len(out) > 0 {
		dst = unsafe.Pointer(&out[0])
	}
	var cerr *C.sn_error
	code := C.sn_buffer_copy_out(b.p, dst, C.size_t(uintptr(len(out))*unsafe.Sizeof(*new(T))), &cerr)
	runtime.KeepAlive(b)
	runtime.KeepAlive(out)
	return checkCode(code, cerr)
}

// ToSlice copies b into a new slice.
func ToSlice[T Element](b *Buffer) ([]T, error) {
	out := make([]T, b.NumEl())
	if err := CopyOut(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// NewBuffer allocates a buffer of T's dtype and the given shape on d and copies data into it.
func NewBuffer[T Element](d *Device, data []T, shape ...int64) (*Buffer, error) {
	b, err := d.Alloc(DTypeOf[T](), shape...)
	if err != nil {
		return nil, err
	}
	if err := CopyIn(b, data); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// ---- compile ----

// CompileOptions are the options of Graph.Compile; start from DefaultCompileOptions.
type CompileOptions struct {
	Debug      int   // SN_DEBUG level for this compile and the program's runs; -1: the context's
	Optimize   bool  // run the kernel optimizer (loop order, vector tiles, threads)
	Threads    bool  // allow kernels to run on all cores
	KeepStages bool  // keep the graph after every stage as text (Program.Stage)
	UseCache   bool  // reuse a program compiled before from the same content
	Inputs     []UOp // the program's inputs in Run order; nil: every input the outputs read, in creation order
	Effects    []UOp // in-place updates (Graph.Assign) to run besides the outputs (API version 5)
	// Beam is the BEAM search width (API version 6): each kernel's opts are chosen by timing candidates on the
	// device (the Beam fastest kept per step) instead of by the heuristic, once per kernel (kept in the disk
	// cache). 0: off; at most 64; -1: $SN_BEAM, else 0.
	Beam int
	// KernelOpts are opts to force, one kernel per line "<kernel id>: <opts>" as Program.KernelOpts prints
	// them, e.g. "5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4)" (nothing after the colon: no opts). Kernels not
	// listed are optimized as usual. A line that does not parse, an id no kernel of the program has, or opts
	// that do not apply are an *Error with CodeInvalidArg. (API version 6.)
	KernelOpts []string
}

// DefaultCompileOptions are the library's defaults.
func DefaultCompileOptions() CompileOptions {
	return CompileOptions{Debug: -1, Optimize: true, Threads: true, UseCache: true, Beam: -1}
}

// cStrings copies strs into one C array of C strings (nil for none), for a C struct that must not point into
// Go memory. A string with a NUL byte, which C would cut short, is an *Error with CodeInvalidArg naming what.
// Free with freeCStrings.
func cStrings(what string, strs []string) (**C.char, C.size_t, error) {
	if len(strs) == 0 {
		return nil, 0, nil
	}
	for i, s := range strs {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, 0, &Error{Code: CodeInvalidArg, Message: fmt.Sprintf("%s[%d] contains a NUL byte: %q", what, i, s)}
		}
	}
	arr := (**C.char)(C.malloc(C.size_t(len(strs)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	view := unsafe.Slice(arr, len(strs))
	for i, s := range strs {
		view[i] = C.CString(s)
	}
	return arr, C.size_t(len(strs)), nil
}

func freeCStrings(arr **C.char, n C.size_t) {
	if arr == nil {
		return
	}
	for _, s := range unsafe.Slice(arr, int(n)) {
		C.free(unsafe.Pointer(s))
	}
	C.free(unsafe.Pointer(arr))
}

func cbool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// Compile compiles the tensor program under outputs for dev (nil: the context's default device) with opts
// (nil: the defaults). The program does not need the graph afterwards. outputs may be empty when
// opts.Effects lists in-place updates.
func (g *Graph) Compile(outputs []UOp, dev *Device, opts *CompileOptions) (*Program, error) {
	if opts == nil {
		d := DefaultCompileOptions()
		opts = &d
	}
	outs, nouts, err := g.uopArray(outputs)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(outs))
	ins, nins, err := g.uopArray(opts.Inputs)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(ins))
	effects, neffects, err := g.uopArray(opts.Effects)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(effects))
	if opts.Beam < math.MinInt32 || opts.Beam > math.MaxInt32 { // C would see another number
		return nil, &Error{Code: CodeInvalidArg, Message: fmt.Sprintf("Compile: Beam %d is outside [0, 64] (-1: $SN_BEAM)", opts.Beam)}
	}
	lines, nlines, err := cStrings("Compile: KernelOpts", opts.KernelOpts)
	if err != nil {
		return nil, err
	}
	defer freeCStrings(lines, nlines)
	var cdev *C.sn_device
	if dev != nil {
		if dev.p == nil {
			return nil, ErrClosed
		}
		cdev = dev.p
	}
	var prog *C.sn_program
	err = g.locked(func(gp *C.sn_graph) error {
		var o C.sn_compile_options
		var cerr *C.sn_error
		if err := checkCode(C.sn_compile_options_init(&o, C.size_t(unsafe.Sizeof(o)), &cerr), cerr); err != nil {
			return err
		}
		o.debug = C.int32_t(opts.Debug)
		o.optimize = cbool(opts.Optimize)
		o.threads = cbool(opts.Threads)
		o.keep_stages = cbool(opts.KeepStages)
		o.use_cache = cbool(opts.UseCache)
		if opts.Inputs != nil {
			o.inputs = ins // C memory: a struct handed to C must not point into Go memory
			o.ninputs = nins
		}
		if opts.Effects != nil {
			o.effects = effects
			o.neffects = neffects
		}
		if opts.Beam != -1 {
			o.beam = C.int32_t(opts.Beam)
		}
		o.kernel_opts = lines // C memory, like inputs
		o.nkernel_opts = nlines
		prog = C.sn_compile(gp, outs, nouts, cdev, &o, &cerr)
		return check(cerr)
	})
	runtime.KeepAlive(dev)
	if err != nil {
		return nil, err
	}
	p := &Program{p: prog}
	runtime.SetFinalizer(p, (*Program).Close)
	return p, nil
}

// ---- programs ----

// Program is a compiled tensor program. Safe for concurrent use: several goroutines may Run it at once.
type Program struct {
	mu sync.RWMutex // Run and queries hold it shared, Close exclusively
	p  *C.sn_program
}

// Close releases the program. Idempotent.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p != nil {
		C.sn_program_release(p.p)
		p.p = nil
		runtime.SetFinalizer(p, nil)
	}
	return nil
}

func (p *Program) use(f func(cp *C.sn_program) error) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.p == nil {
		return ErrClosed
	}
	err := f(p.p)
	runtime.KeepAlive(p)
	return err
}

func bufferArray(bufs []*Buffer) ([]*C.sn_buffer, error) {
	out := make([]*C.sn_buffer, len(bufs))
	for i, b := range bufs {
		if b == nil || b.p == nil {
			return nil, &Error{Code: CodeInvalidArg, Message: fmt.Sprintf("buffer %d is nil or closed", i)}
		}
		out[i] = b.p
	}
	return out, nil
}

func firstOrNil(v []*C.sn_buffer) **C.sn_buffer {
	if len(v) == 0 {
		return nil
	}
	return &v[0]
}

// Run runs the program: inputs in its input order, outputs in its output order. Each buffer must have the
// dtype and shape the program expects (InputInfo / OutputInfo). Blocks until done.
func (p *Program) Run(inputs, outputs []*Buffer) error {
	ins, err := bufferArray(inputs)
	if err != nil {
		return err
	}
	outs, err := bufferArray(outputs)
	if err != nil {
		return err
	}
	err = p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		code := C.sn_program_run(cp, firstOrNil(ins), C.size_t(len(ins)), firstOrNil(outs), C.size_t(len(outs)), &cerr)
		return checkCode(code, cerr)
	})
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	return err
}

// RunVars is Run with values for the program's launch-time variables (Graph.Var), by name. Every variable
// needs a value within its bounds (Vars); the values change what runs without recompiling.
func (p *Program) RunVars(inputs, outputs []*Buffer, vars map[string]int64) error {
	ins, err := bufferArray(inputs)
	if err != nil {
		return err
	}
	outs, err := bufferArray(outputs)
	if err != nil {
		return err
	}
	cv := newCVars(vars)
	defer cv.free()
	err = p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		code := C.sn_program_run_vars(cp, firstOrNil(ins), C.size_t(len(ins)), firstOrNil(outs), C.size_t(len(outs)),
			cv.namesPtr(), cv.valuesPtr(), C.size_t(len(cv.names)), &cerr)
		return checkCode(code, cerr)
	})
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	return err
}

// cVars holds launch-time variables as the C API takes them: parallel arrays of names and values.
// The names are C strings in Go memory's keeping until free.
type cVars struct {
	names  []*C.char
	values []C.int64_t
}

func newCVars(vars map[string]int64) cVars {
	cv := cVars{names: make([]*C.char, 0, len(vars)), values: make([]C.int64_t, 0, len(vars))}
	for name, v := range vars {
		cv.names = append(cv.names, C.CString(name))
		cv.values = append(cv.values, C.int64_t(v))
	}
	return cv
}

func (cv cVars) free() {
	for _, n := range cv.names {
		C.free(unsafe.Pointer(n))
	}
}

// The arrays' first elements (cgo allows passing a pointer into a Go slice of C pointers: the strings
// themselves live in C memory), or nil when there are none.
func (cv cVars) namesPtr() **C.char {
	if len(cv.names) == 0 {
		return nil
	}
	return &cv.names[0]
}

func (cv cVars) valuesPtr() *C.int64_t {
	if len(cv.values) == 0 {
		return nil
	}
	return &cv.values[0]
}

// VarInfo is a launch-time variable of a program: its name and bounds.
type VarInfo struct {
	Name     string
	Min, Max int64
}

// Vars lists the launch-time variables the program reads, sorted by name.
func (p *Program) Vars() ([]VarInfo, error) {
	var out []VarInfo
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		n := int(C.sn_program_num_vars(cp, &cerr))
		if err := check(cerr); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			var name *C.char
			var lo, hi C.int64_t
			if err := checkCode(C.sn_program_var_info(cp, C.size_t(i), &name, &lo, &hi, &cerr), cerr); err != nil {
				return err
			}
			out = append(out, VarInfo{Name: C.GoString(name), Min: int64(lo), Max: int64(hi)})
		}
		return nil
	})
	return out, err
}

// AllocOutput is a new buffer shaped like output i, on the program's device.
func (p *Program) AllocOutput(i int) (*Buffer, error) {
	var b *C.sn_buffer
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		b = C.sn_program_alloc_output(cp, C.size_t(i), &cerr)
		return check(cerr)
	})
	if err != nil {
		return nil, err
	}
	return newBuffer(b), nil
}

// AllocOutputVars allocates output i of a program with symbolic shapes at the launch-time variables vars
// (every variable the output's shape uses, within its bounds).
func (p *Program) AllocOutputVars(i int, vars map[string]int64) (*Buffer, error) {
	cv := newCVars(vars)
	defer cv.free()
	var b *C.sn_buffer
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		b = C.sn_program_alloc_output_vars(cp, C.size_t(i), cv.namesPtr(), cv.valuesPtr(), C.size_t(len(cv.names)), &cerr)
		return check(cerr)
	})
	if err != nil {
		return nil, err
	}
	return newBuffer(b), nil
}

// RunAlloc allocates every output, runs, and returns the outputs.
func (p *Program) RunAlloc(inputs ...*Buffer) ([]*Buffer, error) {
	outs := make([]*Buffer, p.NumOutputs())
	for i := range outs {
		b, err := p.AllocOutput(i)
		if err != nil {
			return nil, err
		}
		outs[i] = b
	}
	if err := p.Run(inputs, outs); err != nil {
		for _, b := range outs {
			b.Close()
		}
		return nil, err
	}
	return outs, nil
}

// NumInputs is the number of inputs Run takes.
func (p *Program) NumInputs() int {
	n := 0
	_ = p.use(func(cp *C.sn_program) error { n = int(C.sn_program_num_inputs(cp, nil)); return nil })
	return n
}

// NumOutputs is the number of outputs.
func (p *Program) NumOutputs() int {
	n := 0
	_ = p.use(func(cp *C.sn_program) error { n = int(C.sn_program_num_outputs(cp, nil)); return nil })
	return n
}

type infoFn func(*C.sn_program, C.size_t, *C.sn_dtype, *C.int64_t, C.size_t, *C.size_t, **C.sn_error) C.sn_code

func (p *Program) info(f infoFn, i int) (DType, []int64, error) {
	var dt C.sn_dtype
	var shape []int64
	err := p.use(func(cp *C.sn_program) error {
		var ndim C.size_t
		var cerr *C.sn_error
		if err := checkCode(f(cp, C.size_t(i), &dt, nil, 0, &ndim, &cerr), cerr); err != nil {
			return err
		}
		shape = make([]int64, int(ndim))
		ptr, n := int64s(shape)
		return checkCode(f(cp, C.size_t(i), nil, ptr, n, &ndim, &cerr), cerr)
	})
	return DType(dt), shape, err
}

// InputInfo is the dtype and shape of input i.
func (p *Program) InputInfo(i int) (DType, []int64, error) {
	return p.info(func(cp *C.sn_program, i C.size_t, dt *C.sn_dtype, s *C.int64_t, c C.size_t, n *C.size_t,
		e **C.sn_error) C.sn_code {
		return C.sn_program_input_info(cp, i, dt, s, c, n, e)
	}, i)
}

// OutputInfo is the dtype and shape of output i.
func (p *Program) OutputInfo(i int) (DType, []int64, error) {
	return p.info(func(cp *C.sn_program, i C.size_t, dt *C.sn_dtype, s *C.int64_t, c C.size_t, n *C.size_t,
		e **C.sn_error) C.sn_code {
		return C.sn_program_output_info(cp, i, dt, s, c, n, e)
	}, i)
}

// KernelNames are the names of the kernels one run launches ("r_16_64", ...).
func (p *Program) KernelNames() []string {
	var names []string
	_ = p.use(func(cp *C.sn_program) error {
		n := int(C.sn_program_num_kernels(cp, nil))
		for i := 0; i < n; i++ {
			names = append(names, C.GoString(C.sn_program_kernel_name(cp, C.size_t(i), nil)))
		}
		return nil
	})
	return names
}

// KernelSource is the source of kernel i (LLVM IR on the CPU, OpenCL C on CL, C99 on C).
func (p *Program) KernelSource(i int) (string, error) {
	var s string
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		s = takeString(C.sn_program_kernel_source(cp, C.size_t(i), &cerr))
		return check(cerr)
	})
	return s, err
}

// KernelBinary is kernel i as its driver loads it: the PTX text on CUDA, the code object (ELF) on AMD. A
// device that keeps none (CPU, CL, C) is CodeUnsupported. (API version 8.)
func (p *Program) KernelBinary(i int) ([]byte, error) {
	var b []byte
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		var size C.size_t
		data := C.sn_program_kernel_binary(cp, C.size_t(i), &size, &cerr)
		if err := check(cerr); err != nil {
			return err
		}
		b = C.GoBytes(data, C.int(size))
		return nil
	})
	return b, err
}

// KernelOpts is the opts kernel i got, as one line "<kernel id>: <opts>", e.g.
// "5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4) THREAD(0,2)". The id (16 hex digits) is the content hash of the
// kernel as scheduled, the same in every process; passing the line back in CompileOptions.KernelOpts rebuilds
// exactly this kernel. (API version 6.)
func (p *Program) KernelOpts(i int) (string, error) {
	var s string
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		s = takeString(C.sn_program_kernel_opts(cp, C.size_t(i), &cerr))
		return check(cerr)
	})
	return s, err
}

// Stage is the graph after a pipeline stage ("schedule", "optimized", "linear", "source", ...) as text; it
// needs KeepStages at compile time except for "source".
func (p *Program) Stage(name string) (string, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var s string
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		s = takeString(C.sn_program_stage(cp, cname, &cerr))
		return check(cerr)
	})
	return s, err
}

// ExportC is the program as one standalone C99 file (needs only libc and libm) with one entry point
//
//	int NAME(void *const *inputs, void *const *outputs)
//
// taking the buffers in the program's input and output order; name must be a C identifier. The program
// must be compiled for device "C" (otherwise an *Error with CodeUnsupported), and without launch-time
// variables for now.
func (p *Program) ExportC(name string) (string, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var s string
	err := p.use(func(cp *C.sn_program) error {
		var cerr *C.sn_error
		s = takeString(C.sn_program_export_c(cp, cname, &cerr))
		return check(cerr)
	})
	return s, err
}

// ArenaBytes is the size of the arena the program's intermediate values share.
func (p *Program) ArenaBytes() int {
	n := 0
	_ = p.use(func(cp *C.sn_program) error { n = int(C.sn_program_arena_bytes(cp, nil)); return nil })
	return n
}
