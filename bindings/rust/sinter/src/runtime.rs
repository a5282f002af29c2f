//! Devices, buffers and compiled programs: the compile-and-run half of the C API (API version 2).
use std::ffi::CStr;
use std::fmt;
use std::mem;
use std::os::raw::{c_char, c_void};
use std::ptr::{self, NonNull};

use crate::enums::{Code, DType};
use crate::error::{call, call_code, call_ptr, take_string, Error, Result};
use crate::graph::{c_string, Context, Graph, UOp};
use crate::sys;

unsafe fn borrowed_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// A device that runs programs ("CPU", "CL", ...) or, for "C", only compiles them to C source. Thread-safe;
/// cloning adds a reference.
pub struct Device {
    ptr: NonNull<sys::sn_device>,
}

// SAFETY: devices are refcounted atomically and shared by the context's threads in the C library.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    /// The device called `name` ("CPU", "CPU:0", "CL", "CL:1", "C"; "" for the default). An unknown or
    /// unavailable device is [`Code::DEVICE`] naming the device and the reason.
    pub fn open(ctx: &Context, name: &str) -> Result<Device> {
        let name = c_string("Device::open", name)?;
        // SAFETY: ctx is live; name outlives the call.
        let ptr = call_ptr(|e| unsafe { sys::sn_device_open(ctx.as_ptr(), name.as_ptr(), e) })?;
        Ok(Device { ptr })
    }

    /// A compile-only device for architecture `arch` of GPU backend `backend`: ("CUDA", "sm_90") makes PTX,
    /// ("AMD", "gfx942") AMDGPU code objects, without the driver or a GPU. Programs compile for it
    /// ([`Program::kernel_source`], [`Program::kernel_binary`]) but running one is [`Code::DEVICE`]. A backend
    /// that cannot is [`Code::DEVICE`], an unknown arch [`Code::INVALID_ARG`], each named. (API version 8.)
    pub fn open_target(ctx: &Context, backend: &str, arch: &str) -> Result<Device> {
        let backend = c_string("Device::open_target", backend)?;
        let arch = c_string("Device::open_target", arch)?;
        // SAFETY: ctx is live; both strings outlive the call.
        let ptr = call_ptr(|e| unsafe { sys::sn_device_open_target(ctx.as_ptr(), backend.as_ptr(), arch.as_ptr(), e) })?;
        Ok(Device { ptr })
    }

    /// The canonical name, e.g. "CPU".
    pub fn name(&self) -> String {
        // SAFETY: the name is borrowed from the live device and copied at once.
        unsafe { borrowed_str(sys::sn_device_name(self.ptr.as_ptr(), ptr::null_mut())) }
    }

    /// What the device is, e.g. the OpenCL device and platform ("pthread-haswell-AMD EPYC (Portable Computing
    /// Language, OpenCL 3.0 ...)").
    pub fn description(&self) -> Result<String> {
        // SAFETY: self is live; the returned string is ours to free.
        unsafe { call(|e| sys::sn_device_description(self.ptr.as_ptr(), e)).map(|s| take_string(s)) }
    }

    /// A new buffer of `dtype` and `shape` on this device (contents undefined).
    pub fn alloc(&self, dtype: DType, shape: &[i64]) -> Result<Buffer> {
        // SAFETY: self is live; shape outlives the call.
        let ptr =
            call_ptr(|e| unsafe { sys::sn_buffer_alloc(self.ptr.as_ptr(), dtype.0, shape.as_ptr(), shape.len(), e) })?;
        Ok(Buffer { ptr })
    }

    /// A new buffer holding `data`, shaped `shape` (the element count must match).
    pub fn buffer_from<T: Element>(&self, shape: &[i64], data: &[T]) -> Result<Buffer> {
        let mut b = self.alloc(T::DTYPE, shape)?;
        b.copy_from(data)?;
        Ok(b)
    }

    /// The raw handle, for calling `sinter_sys` directly. Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::sn_device {
        self.ptr.as_ptr()
    }
}

impl Clone for Device {
    fn clone(&self) -> Device {
        // SAFETY: self.ptr is live; retain adds a reference to the same device.
        unsafe { sys::sn_device_retain(self.ptr.as_ptr()) };
        Device { ptr: self.ptr }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::sn_device_release(self.ptr.as_ptr()) }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.name())
    }
}

impl Context {
    /// Opens the device called `name` ("CPU"; "" for the default). See [`Device::open`].
    pub fn device(&self, name: &str) -> Result<Device> {
        Device::open(self, name)
    }

    /// How many devices backend `backend` ("CPU", "CL", "C") has on this machine: 0 when its driver or hardware
    /// is missing ([`Context::device`] then says why). A backend this build lacks is [`Code::NOT_FOUND`].
    pub fn device_count(&self, backend: &str) -> Result<i32> {
        let backend = c_string("Context::device_count", backend)?;
        // SAFETY: self is live; backend outlives the call.
        call(|e| unsafe { sys::sn_device_count(self.as_ptr(), backend.as_ptr(), e) })
    }

    /// Sets the SN_DEBUG level (0 quiet .. 5 linearized UOps, printed to stderr).
    pub fn set_debug(&self, level: i32) -> Result<()> {
        // SAFETY: self is live.
        call_code(|e| unsafe { sys::sn_context_set_debug(self.as_ptr(), level, e) })
    }

    /// Whether this context's devices keep compiled kernels and BEAM results in the disk cache
    /// (`$SN_CACHE_DIR`, else `$XDG_CACHE_HOME/sinter`, else `~/.cache/sinter`). On by default; `SN_CACHE=0`
    /// turns it off for the whole process. Applies to devices open now and later. (API version 6.)
    pub fn set_disk_cache(&self, enabled: bool) -> Result<()> {
        // SAFETY: self is live.
        call_code(|e| unsafe { sys::sn_context_set_disk_cache(self.as_ptr(), enabled as i32, e) })
    }

    /// The SN_DEBUG level.
    pub fn debug(&self) -> Result<i32> {
        // SAFETY: self is live.
        call(|e| unsafe { sys::sn_context_debug(self.as_ptr(), e) })
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// A Rust type whose values have the layout of a Sinter dtype, for typed copies into and out of buffers.
///
/// # Safety
/// `Self` must have exactly the size and bit layout of one element of `DTYPE`, and every bit pattern of that
/// dtype must be a valid `Self`.
pub unsafe trait Element: Copy + Default {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(
        // SAFETY: two's complement integers and IEEE floats of matching width, any bit pattern valid.
        unsafe impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}
element!(i8 => INT8, i16 => INT16, i32 => INT32, i64 => INT64, u8 => UINT8, u16 => UINT16, u32 => UINT32,
         u64 => UINT64, f32 => FLOAT32, f64 => FLOAT64);

/// A typed, shaped block of device memory.
///
/// `Send` (a buffer may move between threads) but not `Sync`: writing takes `&mut self`, and
/// [`Program::run`] takes its outputs as `&mut Buffer`, so the borrow checker keeps an output from also being
/// an input or being read meanwhile.
pub struct Buffer {
    ptr: NonNull<sys::sn_buffer>,
}

// SAFETY: the C buffer is refcounted atomically and has no thread affinity.
unsafe impl Send for Buffer {}

impl Buffer {
    /// A new buffer of `dtype` and `shape` on `device` (same as [`Device::alloc`]).
    pub fn alloc(device: &Device, dtype: DType, shape: &[i64]) -> Result<Buffer> {
        device.alloc(dtype, shape)
    }

    fn check_dtype<T: Element>(&self, what: &str) -> Result<()> {
        let dt = self.dtype();
        if dt == T::DTYPE {
            Ok(())
        } else {
            Err(Error::new(Code::INVALID_ARG, format!("{what}: the buffer holds {dt}, the slice {}", T::DTYPE)))
        }
    }

    /// Copies `data` into the buffer; its element type must be the buffer's dtype and its length the
    /// buffer's element count.
    pub fn copy_from<T: Element>(&mut self, data: &[T]) -> Result<()> {
        self.check_dtype::<T>("Buffer::copy_from")?;
        // SAFETY: data is valid for size_of_val(data) bytes; the library checks that this is the buffer's size.
        call_code(|e| unsafe {
            sys::sn_buffer_copy_in(self.ptr.as_ptr(), data.as_ptr() as *const c_void, mem::size_of_val(data), e)
        })
    }

    /// Copies the buffer into `out` (same rules as [`Buffer::copy_from`]).
    pub fn copy_to<T: Element>(&self, out: &mut [T]) -> Result<()> {
        self.check_dtype::<T>("Buffer::copy_to")?;
        // SAFETY: out is valid for writes of size_of_val(out) bytes, and every bit pattern is a valid T.
        call_code(|e| unsafe {
            sys::sn_buffer_copy_out(self.ptr.as_ptr(), out.as_mut_ptr() as *mut c_void, mem::size_of_val(out), e)
        })
    }

    /// Copies the contents of `src` into this buffer: the same dtype and element count (the shapes may differ),
    /// on this buffer's device or another (through host memory). Blocks until done.
    pub fn copy_from_buffer(&mut self, src: &Buffer) -> Result<()> {
        // SAFETY: both handles are live for the call; `&mut self` and `&Buffer` cannot be the same buffer (a
        // view's aliasing is covered by the contract of the unsafe `Buffer::view`).
        call_code(|e| unsafe { sys::sn_buffer_copy(self.ptr.as_ptr(), src.ptr.as_ptr(), e) })
    }

    /// The contents as a `Vec<T>` (T must be the buffer's dtype).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.numel() as usize];
        self.copy_to(&mut v)?;
        Ok(v)
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        // SAFETY: self is live.
        DType(unsafe { sys::sn_buffer_dtype(self.ptr.as_ptr(), ptr::null_mut()) })
    }

    /// The shape.
    pub fn shape(&self) -> Vec<i64> {
        // SAFETY: self is live; every axis below the rank is valid.
        unsafe {
            let rank = sys::sn_buffer_rank(self.ptr.as_ptr(), ptr::null_mut()).max(0) as usize;
            (0..rank).map(|i| sys::sn_buffer_dim(self.ptr.as_ptr(), i, ptr::null_mut())).collect()
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        // SAFETY: self is live.
        unsafe { sys::sn_buffer_numel(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        // SAFETY: self is live.
        unsafe { sys::sn_buffer_nbytes(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    /// The device's name ("CPU").
    pub fn device_name(&self) -> String {
        // SAFETY: the name is borrowed from the live buffer and copied at once.
        unsafe { borrowed_str(sys::sn_buffer_device(self.ptr.as_ptr(), ptr::null_mut())) }
    }

    /// A view of `shape` elements starting at element `offset`, sharing this buffer's memory.
    ///
    /// # Safety
    /// The view and `self` alias: the borrow checker no longer separates writes to one from reads of the
    /// other, so the caller must not let a write through one overlap (in time, on another thread, or as an
    /// input and output of one run) an access through the other.
    pub unsafe fn view(&self, offset: i64, shape: &[i64]) -> Result<Buffer> {
        let ptr = call_ptr(|e| sys::sn_buffer_view(self.ptr.as_ptr(), offset, shape.as_ptr(), shape.len(), e))?;
        Ok(Buffer { ptr })
    }

    /// The raw handle, for calling `sinter_sys` directly (e.g. DLPack export). Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::sn_buffer {
        self.ptr.as_ptr()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::sn_buffer_release(self.ptr.as_ptr()) }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({} {:?} on {})", self.dtype(), self.shape(), self.device_name())
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// Options of [`Graph::compile`]; `Default` gives the library's defaults.
#[derive(Clone, Debug)]
pub struct CompileOptions<'g> {
    /// SN_DEBUG level for this compile and the program's runs (None: the context's).
    pub debug: Option<i32>,
    /// Run the kernel optimizer (loop order, vector tiles, threads).
    pub optimize: bool,
    /// Allow kernels to run on all cores.
    pub threads: bool,
    /// Keep the graph after every stage as text ([`Program::stage`]).
    pub keep_stages: bool,
    /// Reuse a program compiled before from the same content.
    pub use_cache: bool,
    /// The program's inputs in run order (None: every input the outputs read, in creation order).
    pub inputs: Option<Vec<UOp<'g>>>,
    /// In-place updates to run besides the outputs: uops made by [`Graph::assign`]. Each writes its value
    /// into its input's buffer when the program runs, after every read of the old value (API version 5).
    pub effects: Option<Vec<UOp<'g>>>,
    /// BEAM search width: each kernel's opts are chosen by timing candidates on the device (the `beam` fastest
    /// kept per step) instead of by the heuristic, once per kernel (kept in the disk cache). `Some(0)`: off;
    /// at most 64. None: `$SN_BEAM`, else 0. (API version 6.)
    pub beam: Option<u32>,
    /// Opts to force, one kernel per line `"<kernel id>: <opts>"` as [`Program::kernel_opts`] prints them,
    /// e.g. `"5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4)"` (nothing after the colon: no opts). Kernels not listed
    /// are optimized as usual. A line that does not parse, an id no kernel of the program has, or opts that do
    /// not apply are [`Code::INVALID_ARG`]. Empty: none. (API version 6.)
    pub kernel_opts: Vec<String>,
}

impl Default for CompileOptions<'_> {
    fn default() -> Self {
        CompileOptions {
            debug: None,
            optimize: true,
            threads: true,
            keep_stages: false,
            use_cache: true,
            inputs: None,
            effects: None,
            beam: None,
            kernel_opts: Vec::new(),
        }
    }
}

impl Graph {
    /// Compiles the tensor program under `outputs` for `device` (None: the context's default device).
    /// The program does not need the graph afterwards. `outputs` may be empty when `options.effects` lists
    /// in-place updates.
    pub fn compile(
        &self,
        outputs: &[UOp<'_>],
        device: Option<&Device>,
        options: &CompileOptions<'_>,
    ) -> Result<Program> {
        let outs = self.handles("Graph::compile", outputs)?;
        let ins = match &options.inputs {
            Some(v) => Some(self.handles("Graph::compile (inputs)", v)?),
            None => None,
        };
        let effects = match &options.effects {
            Some(v) => Some(self.handles("Graph::compile (effects)", v)?),
            None => None,
        };
        let beam = options.beam.map(|b| {
            i32::try_from(b)
                .map_err(|_| Error::new(Code::INVALID_ARG, format!("Graph::compile: beam {b} is outside [0, 64]")))
        });
        let beam = beam.transpose()?;
        let lines = options
            .kernel_opts
            .iter()
            .map(|l| c_string("Graph::compile (kernel_opts)", l))
            .collect::<Result<Vec<_>>>()?;
        let line_ptrs: Vec<*const c_char> = lines.iter().map(|l| l.as_ptr()).collect();
        // SAFETY: sn_compile_options is plain data; init sets struct_size and the defaults we then override.
        unsafe {
            let mut o: sys::sn_compile_options = mem::zeroed();
            call_code(|e| sys::sn_compile_options_init(&mut o, mem::size_of::<sys::sn_compile_options>(), e))?;
            o.debug = options.debug.unwrap_or(-1);
            o.optimize = options.optimize as i32;
            o.threads = options.threads as i32;
            o.keep_stages = options.keep_stages as i32;
            o.use_cache = options.use_cache as i32;
            if let Some(ins) = &ins {
                o.inputs = ins.as_ptr();
                o.ninputs = ins.len();
            }
            if let Some(effects) = &effects {
                o.effects = effects.as_ptr();
                o.neffects = effects.len();
            }
            if let Some(beam) = beam {
                o.beam = beam;
            }
            if !line_ptrs.is_empty() {
                // lines and line_ptrs outlive the call.
                o.kernel_opts = line_ptrs.as_ptr();
                o.nkernel_opts = line_ptrs.len();
            }
            let dev = device.map_or(ptr::null_mut(), |d| d.ptr.as_ptr());
            let ptr = call_ptr(|e| sys::sn_compile(self.as_ptr(), outs.as_ptr(), outs.len(), dev, &o, e))?;
            Ok(Program { ptr })
        }
    }
}

/// dtype and shape of one program input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub dtype: DType,
    pub shape: Vec<i64>,
}

/// A compiled tensor program. Thread-safe: several threads may run one program at once.
pub struct Program {
    ptr: NonNull<sys::sn_program>,
}

// SAFETY: the header documents programs as thread-safe; the refcount is atomic.
unsafe impl Send for Program {}
unsafe impl Sync for Program {}

type InfoFn = unsafe extern "C" fn(
    *const sys::sn_program,
    usize,
    *mut sys::sn_dtype,
    *mut i64,
    usize,
    *mut usize,
    *mut *mut sys::sn_error,
) -> sys::sn_code;

impl Program {
    /// Runs the program: `inputs` in its input order, `outputs` in its output order. Each buffer must have
    /// the dtype and shape the program expects ([`Program::input_info`]). Blocks until done.
    pub fn run(&self, inputs: &[&Buffer], outputs: &mut [&mut Buffer]) -> Result<()> {
        let ins: Vec<*mut sys::sn_buffer> = inputs.iter().map(|b| b.ptr.as_ptr()).collect();
        let outs: Vec<*mut sys::sn_buffer> = outputs.iter().map(|b| b.ptr.as_ptr()).collect();
        // SAFETY: every handle is live for the call (borrowed); outputs are exclusively borrowed.
        call_code(|e| unsafe {
            sys::sn_program_run(self.ptr.as_ptr(), ins.as_ptr(), ins.len(), outs.as_ptr(), outs.len(), e)
        })
    }

    /// [`Program::run`] with values for the program's launch-time variables ([`Graph::var`]): each
    /// `(name, value)` binds one; every variable needs a value within its bounds ([`Program::vars`]).
    pub fn run_with_vars(&self, inputs: &[&Buffer], outputs: &mut [&mut Buffer], vars: &[(&str, i64)]) -> Result<()> {
        let ins: Vec<*mut sys::sn_buffer> = inputs.iter().map(|b| b.ptr.as_ptr()).collect();
        let outs: Vec<*mut sys::sn_buffer> = outputs.iter().map(|b| b.ptr.as_ptr()).collect();
        let names = vars.iter().map(|(n, _)| c_string("Program::run_with_vars", n)).collect::<Result<Vec<_>>>()?;
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let values: Vec<i64> = vars.iter().map(|(_, v)| *v).collect();
        // SAFETY: every handle is live for the call (borrowed); the name strings outlive it.
        call_code(|e| unsafe {
            sys::sn_program_run_vars(
                self.ptr.as_ptr(),
                ins.as_ptr(),
                ins.len(),
                outs.as_ptr(),
                outs.len(),
                name_ptrs.as_ptr(),
                values.as_ptr(),
                values.len(),
                e,
            )
        })
    }

    /// The launch-time variables the program reads, sorted by name: `(name, min, max)`.
    pub fn vars(&self) -> Result<Vec<(String, i64, i64)>> {
        // SAFETY: self is live.
        let n = call(|e| unsafe { sys::sn_program_num_vars(self.ptr.as_ptr(), e) })?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (mut name, mut min, mut max): (*const c_char, i64, i64) = (ptr::null(), 0, 0);
            // SAFETY: self is live; the out-pointers are valid; the name is owned by the program.
            call_code(|e| unsafe { sys::sn_program_var_info(self.ptr.as_ptr(), i, &mut name, &mut min, &mut max, e) })?;
            // SAFETY: a NUL-terminated string owned by the live program.
            out.push((unsafe { borrowed_str(name) }, min, max));
        }
        Ok(out)
    }

    /// A new buffer shaped like output `index`, on the program's device.
    pub fn alloc_output(&self, index: usize) -> Result<Buffer> {
        // SAFETY: self is live.
        let ptr = call_ptr(|e| unsafe { sys::sn_program_alloc_output(self.ptr.as_ptr(), index, e) })?;
        Ok(Buffer { ptr })
    }

    /// A new buffer for output `index` at the launch-time variables `vars` (API version 7): the output's shape
    /// at those values. Every variable the shape uses needs a value within its bounds.
    pub fn alloc_output_with_vars(&self, index: usize, vars: &[(&str, i64)]) -> Result<Buffer> {
        let names =
            vars.iter().map(|(n, _)| c_string("Program::alloc_output_with_vars", n)).collect::<Result<Vec<_>>>()?;
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let values: Vec<i64> = vars.iter().map(|(_, v)| *v).collect();
        // SAFETY: self is live; the name strings and values outlive the call.
        let ptr = call_ptr(|e| unsafe {
            sys::sn_program_alloc_output_vars(
                self.ptr.as_ptr(),
                index,
                name_ptrs.as_ptr(),
                values.as_ptr(),
                values.len(),
                e,
            )
        })?;
        Ok(Buffer { ptr })
    }

    /// Allocates every output, runs, and returns the outputs.
    pub fn run_alloc(&self, inputs: &[&Buffer]) -> Result<Vec<Buffer>> {
        let mut outs = (0..self.num_outputs()).map(|i| self.alloc_output(i)).collect::<Result<Vec<_>>>()?;
        let mut refs: Vec<&mut Buffer> = outs.iter_mut().collect();
        self.run(inputs, &mut refs)?;
        Ok(outs)
    }

    /// Number of inputs [`Program::run`] takes.
    pub fn num_inputs(&self) -> usize {
        // SAFETY: self is live.
        unsafe { sys::sn_program_num_inputs(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    /// Number of outputs.
    pub fn num_outputs(&self) -> usize {
        // SAFETY: self is live.
        unsafe { sys::sn_program_num_outputs(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    fn info(&self, f: InfoFn, index: usize) -> Result<TensorInfo> {
        let mut dtype = sys::sn_dtype::SN_DTYPE_INVALID;
        let mut ndim = 0usize;
        // SAFETY: first call asks only for the rank; the second fills a shape of that capacity.
        unsafe {
            call_code(|e| f(self.ptr.as_ptr(), index, &mut dtype, ptr::null_mut(), 0, &mut ndim, e))?;
            let mut shape = vec![0i64; ndim];
            call_code(|e| f(self.ptr.as_ptr(), index, ptr::null_mut(), shape.as_mut_ptr(), shape.len(), &mut ndim, e))?;
            Ok(TensorInfo { dtype: DType(dtype), shape })
        }
    }

    /// dtype and shape of input `index`.
    pub fn input_info(&self, index: usize) -> Result<TensorInfo> {
        self.info(sys::sn_program_input_info, index)
    }

    /// dtype and shape of output `index`.
    pub fn output_info(&self, index: usize) -> Result<TensorInfo> {
        self.info(sys::sn_program_output_info, index)
    }

    /// Names of the kernels one run launches ("r_16_64", ...).
    pub fn kernel_names(&self) -> Vec<String> {
        // SAFETY: self is live; names are borrowed and copied at once.
        unsafe {
            let n = sys::sn_program_num_kernels(self.ptr.as_ptr(), ptr::null_mut());
            (0..n).map(|i| borrowed_str(sys::sn_program_kernel_name(self.ptr.as_ptr(), i, ptr::null_mut()))).collect()
        }
    }

    /// Source of kernel `index` (LLVM IR on the CPU, OpenCL C on CL, C99 on C).
    pub fn kernel_source(&self, index: usize) -> Result<String> {
        // SAFETY: the returned string is ours to free.
        unsafe { call(|e| sys::sn_program_kernel_source(self.ptr.as_ptr(), index, e)).map(|s| take_string(s)) }
    }

    /// The binary of kernel `index` as its driver loads it: the PTX text on CUDA, the code object (ELF) on AMD.
    /// A device that keeps none (CPU, CL, C) is [`Code::UNSUPPORTED`]. (API version 8.)
    pub fn kernel_binary(&self, index: usize) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: self is live; the bytes are borrowed from the program and copied before it can go.
        unsafe {
            let p = call(|e| sys::sn_program_kernel_binary(self.ptr.as_ptr(), index, &mut size, e))?;
            if p.is_null() {
                return Err(Error::new(Code::INTERNAL, "the C API returned NULL without an error"));
            }
            Ok(std::slice::from_raw_parts(p as *const u8, size).to_vec())
        }
    }

    /// The opts kernel `index` got, as one line `"<kernel id>: <opts>"`, e.g.
    /// `"5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4) THREAD(0,2)"`. The id (16 hex digits) is the content hash of
    /// the kernel as scheduled, the same in every process; passing the line back in
    /// [`CompileOptions::kernel_opts`] rebuilds exactly this kernel. (API version 6.)
    pub fn kernel_opts(&self, index: usize) -> Result<String> {
        // SAFETY: the returned string is ours to free.
        unsafe { call(|e| sys::sn_program_kernel_opts(self.ptr.as_ptr(), index, e)).map(|s| take_string(s)) }
    }

    /// The graph after pipeline `stage` ("schedule", "optimized", "linear", "source", ...) as text. Needs
    /// [`CompileOptions::keep_stages`] except for "source".
    pub fn stage(&self, stage: &str) -> Result<String> {
        let stage = c_string("Program::stage", stage)?;
        // SAFETY: the returned string is ours to free.
        unsafe { call(|e| sys::sn_program_stage(self.ptr.as_ptr(), stage.as_ptr(), e)).map(|s| take_string(s)) }
    }

    /// The program as one standalone C99 file (needs only libc and libm) with one entry point
    /// `int NAME(void *const *inputs, void *const *outputs)` taking the buffers in the program's input and
    /// output order; `name` must be a C identifier. The program must be compiled for device "C" (otherwise
    /// [`Code::UNSUPPORTED`]), and without launch-time variables for now.
    pub fn export_c(&self, name: &str) -> Result<String> {
        let name = c_string("Program::export_c", name)?;
        // SAFETY: the returned string is ours to free.
        unsafe { call(|e| sys::sn_program_export_c(self.ptr.as_ptr(), name.as_ptr(), e)).map(|s| take_string(s)) }
    }

    /// Bytes of the arena the program's intermediate values share.
    pub fn arena_bytes(&self) -> usize {
        // SAFETY: self is live.
        unsafe { sys::sn_program_arena_bytes(self.ptr.as_ptr(), ptr::null_mut()) }
    }

    /// The raw handle, for calling `sinter_sys` directly. Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::sn_program {
        self.ptr.as_ptr()
    }
}

impl Clone for Program {
    fn clone(&self) -> Program {
        // SAFETY: self.ptr is live; retain adds a reference to the same program.
        unsafe { sys::sn_program_retain(self.ptr.as_ptr()) };
        Program { ptr: self.ptr }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::sn_program_release(self.ptr.as_ptr()) }
    }
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Program({} inputs, {} outputs, kernels {:?})",
            self.num_inputs(),
            self.num_outputs(),
            self.kernel_names()
        )
    }
}
