//! The ABI 1.1 slots through the safe layer, on the default backend: the
//! fake CUDA driver and fake NVRTC in `make check` (the fake runs its own
//! versions of the kernels below: tests/fakecuda/fake_kernels.c), the real
//! driver on the GPU lane. Every result is checked bit for bit against a
//! reference computed here, every refusal by its exact status. Without a
//! backend that can run, each test skips saying why (tests/common).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[macro_use]
mod common;

use common::pattern;
use t4a_gpu::{
    sys, Arg, Backend, CompileOptions, DataType, Event, ExternalMemory, Function, LaunchConfig,
    LaunchExConfig, Module, Rect, Runtime, Status, Stream, TensorView,
};

const SOURCE: &str = r#"
struct Pair { double x; unsigned n; };
extern "C" __global__ void t4a_pair(Pair p, unsigned *out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long bits = (unsigned long long)__double_as_longlong(p.x);
    out[0] = (unsigned)(p.x * p.n);
    out[1] = p.n;
    out[2] = (unsigned)bits;
    out[3] = (unsigned)(bits >> 32);
  }
}
extern "C" __global__ void t4a_fill_u32(unsigned int *p, unsigned int value,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = value;
}
extern "C" __global__ void t4a_empty(unsigned long long unused) {}
"#;

/// The kernel's `struct Pair { double x; unsigned n; }`, by value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Pair {
    x: f64,
    n: u32,
}

/// What t4a_pair stores for `p` (x >= 0: a negative double to unsigned is
/// undefined in C).
fn pair_expected(p: Pair) -> [u32; 4] {
    let bits = p.x.to_bits();
    [(p.x * p.n as f64) as u32, p.n, bits as u32, (bits >> 32) as u32]
}

fn module<'r>(rt: &'r Runtime<'_>) -> Module<'r> {
    let art = rt
        .compile(
            SOURCE,
            &CompileOptions {
                name: Some("t4a_v11.cu".into()),
                ..CompileOptions::default()
            },
        )
        .expect("compile");
    rt.load(&art).expect("load")
}

fn words(buf: &t4a_gpu::Buffer<'_>) -> Vec<u32> {
    let mut w = vec![0u32; buf.len() as usize / 4];
    buf.read(0, &mut w).unwrap();
    w
}

fn fill(rt: &Runtime<'_>, f: &Function<'_>, buf: &t4a_gpu::Buffer<'_>, v: u32, n: u64) {
    rt.launch(f, &LaunchConfig::linear(2, 64), &[buf.into(), v.into(), n.into()])
        .unwrap();
}

#[test]
fn struct_arguments_pass_by_value() {
    let b = backend!("struct_arguments_pass_by_value");
    needs_compiler!(b, "struct_arguments_pass_by_value");
    let rt = b.runtime(0).unwrap();
    let m = module(&rt);
    let pair = m.function("t4a_pair").unwrap();
    let out = rt.alloc(16).unwrap();
    assert_eq!(std::mem::size_of::<Pair>(), 16);
    for p in [Pair { x: 10.5, n: 7 }, Pair { x: 2.25, n: 3 }, Pair { x: 0.0, n: 0 }] {
        out.fill(0xffff_ffffu32).unwrap();
        rt.launch(&pair, &LaunchConfig::linear(1, 32), &[Arg::value(&p), (&out).into()])
            .unwrap();
        assert_eq!(words(&out), pair_expected(p), "{p:?}");
    }
    // The same through launch_ex, and a struct of the parameter's size as bytes.
    let p = Pair { x: 6.25, n: 4 };
    rt.launch_ex(&pair, &LaunchExConfig::linear(1, 32), &[Arg::value(&p), (&out).into()])
        .unwrap();
    assert_eq!(words(&out), pair_expected(p));
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&3.0f64.to_ne_bytes());
    raw[8..12].copy_from_slice(&5u32.to_ne_bytes());
    rt.launch(&pair, &LaunchConfig::linear(1, 1), &[Arg::value(&raw), (&out).into()])
        .unwrap();
    assert_eq!(words(&out), pair_expected(Pair { x: 3.0, n: 5 }));
    // A kernel of another runtime is refused before any call.
    let other = b.runtime(0).unwrap();
    let e = other
        .launch(&pair, &LaunchConfig::linear(1, 1), &[Arg::value(&p), (&out).into()])
        .unwrap_err();
    assert_eq!((e.status, e.call), (Status::EINVAL, "launch"));
}

#[test]
fn memset_and_fill_bit_exact() {
    let b = backend!("memset_and_fill_bit_exact");
    let rt = b.runtime(0).unwrap();
    let buf = rt.alloc(64).unwrap();
    let mut got = [0u8; 64];
    buf.fill(0xabu8).unwrap();
    buf.read(0, &mut got).unwrap();
    assert_eq!(got, [0xab; 64]);
    buf.fill(-2i16).unwrap();
    buf.read(0, &mut got).unwrap();
    assert!(got.chunks(2).all(|c| c == (-2i16).to_ne_bytes()));
    buf.fill(0xdead_beefu32).unwrap();
    buf.read(0, &mut got).unwrap();
    assert!(got.chunks(4).all(|c| c == 0xdead_beefu32.to_ne_bytes()));
    buf.fill(-0.1f32).unwrap();
    buf.read(0, &mut got).unwrap();
    assert!(got.chunks(4).all(|c| c == (-0.1f32).to_ne_bytes()));

    buf.fill(0u8).unwrap();
    buf.memset(2, 7, 2, 3).unwrap();
    buf.memset(30, 0x11, 1, 2).unwrap();
    buf.read(0, &mut got).unwrap();
    let mut want = [0u8; 64];
    want[2..8].copy_from_slice(&[7, 0, 7, 0, 7, 0]);
    want[30..32].copy_from_slice(&[0x11, 0x11]);
    assert_eq!(got, want);

    let e = buf.memset(48, 1, 4, 5).unwrap_err();
    assert_eq!((e.status, e.call), (Status::ERANGE, "memset"));
    assert_eq!(buf.memset(2, 1, 4, 1).unwrap_err().status, Status::EINVAL); // misaligned
    assert_eq!(buf.memset(0, 0x100, 1, 1).unwrap_err().status, Status::EINVAL); // too wide
    assert_eq!(buf.memset(0, 1, 3, 1).unwrap_err().status, Status::EINVAL);
    let odd = rt.alloc(6).unwrap();
    assert_eq!(odd.fill(1u32).unwrap_err().status, Status::EINVAL);
    buf.memset(0, 1, 4, 0).unwrap(); // count 0: nothing
}

#[test]
fn rectangle_copies_bit_exact() {
    let b = backend!("rectangle_copies_bit_exact");
    let rt = b.runtime(0).unwrap();
    let (width, rows, pitch) = (12u64, 5u64, 40u64);
    let src = pattern((width * rows) as usize, 5);
    let dev = rt.alloc(pitch * rows).unwrap();
    dev.fill(0xeeu8).unwrap();
    dev.write_2d(&src, &Rect::new(width, rows).dst_pitch(pitch))
        .unwrap();
    let mut all = vec![0u8; (pitch * rows) as usize];
    dev.read(0, &mut all).unwrap();
    for r in 0..rows as usize {
        let row = &all[r * pitch as usize..(r + 1) * pitch as usize];
        assert_eq!(&row[..width as usize], &src[r * width as usize..(r + 1) * width as usize]);
        assert!(row[width as usize..].iter().all(|&x| x == 0xee));
    }
    // Back into a pitched host slice: the bytes between rows are untouched.
    let mut back = vec![0x55u8; (16 * rows) as usize];
    dev.read_2d(&mut back, &Rect::new(width, rows).src_pitch(pitch).dst_pitch(16))
        .unwrap();
    for r in 0..rows as usize {
        assert_eq!(&back[r * 16..r * 16 + 12], &src[r * 12..(r + 1) * 12]);
        assert_eq!(&back[r * 16 + 12..(r + 1) * 16], &[0x55; 4]);
    }
    // Device to device, pitched to packed, then through pinned memory.
    let packed = rt.alloc(width * rows).unwrap();
    packed
        .copy_2d_from(&dev, &Rect::new(width, rows).src_pitch(pitch))
        .unwrap();
    let mut flat = vec![0u8; (width * rows) as usize];
    packed.read(0, &mut flat).unwrap();
    assert!(flat == src, "the data differs");
    let hb = rt.host_alloc(pitch * rows, false).unwrap();
    let dev2 = rt.alloc(width * rows).unwrap();
    // SAFETY: the host buffer is touched only after the synchronize.
    unsafe {
        hb.copy_2d_from_device(&packed, &Rect::new(width, rows).dst_pitch(pitch))
            .unwrap();
        dev2.copy_2d_from_pinned(&hb, &Rect::new(width, rows).src_pitch(pitch))
            .unwrap();
    }
    rt.synchronize().unwrap();
    let h = hb.as_slice();
    assert_eq!(&h[2 * pitch as usize..2 * pitch as usize + 12], &src[24..36]);
    dev2.read(0, &mut flat).unwrap();
    assert!(flat == src, "the data differs");

    // Refusals: a host slice too short (here, before any call), device rows
    // out of range, a pitch below the width.
    let e = dev
        .write_2d(&src[..50], &Rect::new(width, rows).dst_pitch(pitch))
        .unwrap_err();
    assert_eq!((e.status, e.call), (Status::ERANGE, "copy_2d_h2d"));
    let mut short = vec![0u8; 59];
    let e = dev.read_2d(&mut short, &Rect::new(width, rows)).unwrap_err();
    assert_eq!((e.status, e.call), (Status::ERANGE, "copy_2d_d2h"));
    let e = dev
        .write_2d(
            &src,
            &Rect {
                dst_offset: pitch * rows,
                ..Rect::new(width, rows).dst_pitch(pitch)
            },
        )
        .unwrap_err();
    assert_eq!(e.status, Status::ERANGE);
    let e = packed
        .copy_2d_from(&dev, &Rect::new(width, rows).src_pitch(width - 1))
        .unwrap_err();
    assert_eq!(e.status, Status::EINVAL);
    let info = b.device(0).unwrap();
    assert!(info.raw.max_pitch >= pitch);
}

#[test]
fn memory_info_and_registered_memory() {
    let b = backend!("memory_info_and_registered_memory");
    needs_compiler!(b, "memory_info_and_registered_memory");
    let rt = b.runtime(0).unwrap();
    let m = module(&rt);
    let fillk = m.function("t4a_fill_u32").unwrap();
    let before = rt.memory_info().unwrap();
    assert!(before.device_total > 0 && before.device_free <= before.device_total);
    let big = rt.alloc(1 << 20).unwrap();
    let after = rt.memory_info().unwrap();
    assert!(after.pool_used >= before.pool_used + (1 << 20));
    assert!(after.pool_high_water >= after.pool_used);
    drop(big);

    // The device writes the caller's memory in place.
    let dev = rt.alloc(4096).unwrap();
    fill(&rt, &fillk, &dev, 0x0a0b_0c0d, 1024);
    let mut host = vec![0u32; 1024];
    {
        let reg = rt.register(&mut host).unwrap();
        assert!(reg.is_registered() && reg.len() == 4096);
        // SAFETY: the memory is read only after the registration dropped
        // (which waits for the copy).
        unsafe { reg.copy_from_device(0, &dev, 0, 4096).unwrap() };
        assert_eq!(rt.counters().unwrap().live_host_buffers, 1);
    } // unregistered, and the copy waited for
    assert!(host.iter().all(|&w| w == 0x0a0b_0c0d));
    assert_eq!(rt.counters().unwrap().live_host_buffers, 0);

    // Read-only: the device reads it; a copy into it is refused.
    let src: Vec<u8> = pattern(4096, 9);
    let ro = rt.register_read_only(&src).unwrap();
    // SAFETY: `src` is not written while registered (it is borrowed).
    unsafe { dev.copy_from_pinned(0, &ro, 0, 4096).unwrap() };
    let mut got = vec![0u8; 4096];
    dev.read(0, &mut got).unwrap();
    assert!(got == src, "the data differs");
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { ro.copy_from_device(0, &dev, 0, 16) }.unwrap_err();
    assert_eq!(e.status, Status::EINVAL);
    // The same memory twice (only shared borrows can alias): refused.
    let e = rt.register_read_only(&src).unwrap_err();
    assert_eq!((e.status, e.call), (Status::EINVAL, "host_register"));
    ro.unregister().unwrap();
    let again = rt.register_read_only(&src).unwrap();
    again.unregister().unwrap();
}

#[test]
fn witnesses_time_the_work() {
    let b = backend!("witnesses_time_the_work");
    needs_compiler!(b, "witnesses_time_the_work");
    let opts = sys::t4a_runtime_options {
        flags: sys::T4A_RUNTIME_TIMING,
        ..sys::t4a_runtime_options::sized()
    };
    let rt = b.runtime_with(0, Some(&opts)).unwrap();
    assert!(rt.info().unwrap().timing);
    let m = module(&rt);
    let f = m.function("t4a_fill_u32").unwrap();
    let buf = rt.alloc(4 * 4096).unwrap();
    let start = rt.seal().unwrap();
    fill(&rt, &f, &buf, 1, 4096);
    let end = rt.seal().unwrap();
    end.wait(Some(Duration::from_secs(60))).unwrap();
    let span = start.elapsed(&end).unwrap();
    assert!(span < Duration::from_secs(60));
    let e = end.elapsed(&start).unwrap_err(); // a negative span
    assert_eq!((e.status, e.call), (Status::EINVAL, "witness_elapsed"));

    let plain = b.runtime(0).unwrap();
    assert!(!plain.info().unwrap().timing);
    let (a, c) = (plain.seal().unwrap(), plain.seal().unwrap());
    assert_eq!(a.elapsed(&c).unwrap_err().status, Status::EUNSUPPORTED);
    assert_eq!(a.elapsed(&end).unwrap_err().status, Status::EINVAL); // two runtimes
}

#[test]
fn runtime_info_launch_ex_and_occupancy() {
    let b = backend!("runtime_info_launch_ex_and_occupancy");
    needs_compiler!(b, "runtime_info_launch_ex_and_occupancy");
    let rt = b.runtime(0).unwrap();
    let info = rt.info().unwrap();
    assert_eq!((info.device, info.capturing), (0, false));
    assert!(info.priority_greatest <= info.priority_least);
    if common::fake(&b) {
        assert!(info.clusters && info.cooperative && info.graphs && info.priorities);
        assert_eq!((info.priority_least, info.priority_greatest), (0, -5));
    }
    if info.priorities {
        let opts = sys::t4a_runtime_options {
            stream_priority: info.priority_greatest,
            ..sys::t4a_runtime_options::sized()
        };
        let hi = b.runtime_with(0, Some(&opts)).unwrap();
        assert_eq!(hi.info().unwrap().stream_priority, info.priority_greatest);
    }
    let m = module(&rt);
    let f = m.function("t4a_fill_u32").unwrap();
    let buf = rt.alloc(4 * 512).unwrap();
    let args = |v: u32| [Arg::from(&buf), v.into(), 512u64.into()];
    if info.clusters {
        let cfg = LaunchExConfig::linear(4, 64).with_cluster(2);
        rt.launch_ex(&f, &cfg, &args(21)).unwrap();
        assert_eq!(words(&buf), vec![21; 512]);
        assert!(f.max_active_clusters(&cfg).unwrap() > 0);
        let bad = LaunchExConfig::linear(3, 64).with_cluster(2); // 2 does not divide 3
        assert_eq!(rt.launch_ex(&f, &bad, &args(1)).unwrap_err().status, Status::EINVAL);
    }
    if info.cooperative {
        let cfg = LaunchExConfig {
            cooperative: true,
            ..LaunchExConfig::linear(2, 64)
        };
        rt.launch_ex(&f, &cfg, &args(22)).unwrap();
        assert_eq!(words(&buf), vec![22; 512]);
    }
    if info.priorities {
        let cfg = LaunchExConfig {
            priority: Some(info.priority_greatest),
            ..LaunchExConfig::linear(2, 64)
        };
        rt.launch_ex(&f, &cfg, &args(23)).unwrap();
        assert_eq!(words(&buf), vec![23; 512]);
        let low = LaunchExConfig {
            priority: Some(info.priority_greatest - 100),
            ..cfg
        };
        assert_eq!(rt.launch_ex(&f, &low, &args(1)).unwrap_err().status, Status::ERANGE);
    }
    assert!(f.max_active_blocks(128, 0).unwrap() > 0);
    let (block, grid) = f.suggest_block_size(0, 0).unwrap();
    assert!(block >= 1 && block as i32 <= f.attributes().unwrap().max_threads_per_block);
    assert!(grid >= 1);
    assert_eq!(f.max_active_blocks(0, 0).unwrap_err().status, Status::EINVAL);
}

#[test]
fn graphs_capture_replay_and_take_new_arguments() {
    let b = backend!("graphs_capture_replay_and_take_new_arguments");
    needs_compiler!(b, "graphs_capture_replay_and_take_new_arguments");
    let rt = b.runtime(0).unwrap();
    if !rt.info().unwrap().graphs {
        common::note("graphs_capture_replay_and_take_new_arguments", "no graphs here");
        return;
    }
    let m = module(&rt);
    let f = m.function("t4a_fill_u32").unwrap();
    let pair = m.function("t4a_pair").unwrap();
    let (a, c, out) = (
        rt.alloc(4 * 256).unwrap(),
        rt.alloc(4 * 256).unwrap(),
        rt.alloc(16).unwrap(),
    );
    a.fill(0u32).unwrap();
    c.fill(0u32).unwrap();
    out.fill(0u32).unwrap();
    let p = Pair { x: 1.5, n: 2 };
    let g = rt
        .capture(|| {
            assert!(rt.info().unwrap().capturing);
            c.fill(9u32)?;
            rt.launch(&f, &LaunchConfig::linear(1, 256), &[(&a).into(), 5u32.into(), 256u64.into()])?;
            rt.launch(&pair, &LaunchConfig::linear(1, 1), &[Arg::value(&p), (&out).into()])?;
            // What changes memory, or waits, is refused during a capture.
            assert_eq!(rt.alloc(16).unwrap_err().status, Status::EBUSY);
            assert_eq!(rt.seal().unwrap_err().status, Status::EBUSY);
            rt.drain() // waits for the work before the capture
        })
        .unwrap();
    assert!(!rt.info().unwrap().capturing);
    let i = g.info().unwrap();
    assert_eq!((i.kernels, i.replays), (2, 0));
    assert!(i.copies >= 1);
    assert_eq!(words(&a), vec![0; 256]); // captured, not run
    g.launch().unwrap();
    assert_eq!(words(&a), vec![5; 256]);
    assert_eq!(words(&c), vec![9; 256]);
    assert_eq!(words(&out), pair_expected(p));
    g.set_kernel_args(0, &[(&c).into(), 6u32.into(), 128u64.into()])
        .unwrap();
    let q = Pair { x: 4.0, n: 8 };
    g.set_kernel_args(1, &[Arg::value(&q), (&out).into()]).unwrap();
    g.launch().unwrap();
    let mut want = vec![6; 128];
    want.extend(vec![9; 128]);
    assert_eq!(words(&c), want);
    assert_eq!(words(&out), pair_expected(q));
    assert_eq!(g.info().unwrap().replays, 2);
    let e = g.set_kernel_args(2, &[(&c).into(), 6u32.into(), 128u64.into()]);
    assert_eq!(e.unwrap_err().status, Status::ERANGE);
    assert_eq!(rt.counters().unwrap().live_graphs, 1);
    g.release().unwrap();
    assert_eq!(rt.counters().unwrap().live_graphs, 0);

    // A failed capture (here: an error of the closure) is discarded, and a
    // registration dropped during a capture waits for the work before it.
    let mut host = vec![0u8; 4096];
    let reg = rt.register(&mut host).unwrap();
    // SAFETY: read after the registration dropped (which waits).
    unsafe { reg.copy_from_device(0, &a, 0, 1024).unwrap() };
    let capture = rt.graph_begin().unwrap();
    assert_eq!(rt.graph_begin().unwrap_err().status, Status::EBUSY);
    drop(reg);
    drop(capture);
    assert!(!rt.info().unwrap().capturing);
    assert!(host[..1024].chunks(4).all(|w| w == 5u32.to_ne_bytes()));
    let e = rt.capture(|| rt.alloc(16).map(drop)).unwrap_err(); // refused in the capture
    assert_eq!((e.status, e.call), (Status::EBUSY, "buffer_alloc"));
    assert!(!rt.info().unwrap().capturing);
    assert_eq!(rt.counters().unwrap().live_graphs, 0);
    a.fill(1u32).unwrap(); // the runtime works on
    assert_eq!(words(&a), vec![1; 256]);
}

#[test]
fn external_memory_is_wrapped_and_released_once() {
    let b = backend!("external_memory_is_wrapped_and_released_once");
    needs_compiler!(b, "external_memory_is_wrapped_and_released_once");
    let (rt, owner) = (b.runtime(0).unwrap(), b.runtime(0).unwrap());
    let data = pattern(4096, 11);
    let src = owner.alloc(4096).unwrap(); // another framework's memory
    src.write(0, &data).unwrap();
    rt.wait_for(&owner.seal().unwrap()).unwrap(); // the owner's work first
    let released = Arc::new(AtomicUsize::new(0));
    let count = released.clone();
    let mem = ExternalMemory {
        address: src.address().unwrap() + 1024,
        bytes: 2048,
        host: false,
        release: Some(Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })),
    };
    // SAFETY: `src` outlives the wrap's release (checked below).
    let ext = unsafe { rt.wrap_external(mem) }.unwrap();
    assert_eq!(ext.len(), 2048);
    let copy = rt.alloc(2048).unwrap();
    copy.copy_from(0, &ext, 0, 2048).unwrap();
    ext.memset(0, 0x77, 1, 16).unwrap();
    let mut got = vec![0u8; 2048];
    copy.read(0, &mut got).unwrap();
    assert!(got == data[1024..3072], "the data differs");
    ext.free().unwrap();
    rt.synchronize().unwrap(); // a natural point after the work completed
    assert_eq!(released.load(Ordering::SeqCst), 1);
    let mut all = vec![0u8; 4096];
    src.read(0, &mut all).unwrap();
    assert_eq!(&all[1024..1040], &[0x77; 16]);
    assert_eq!(&all[1040..], &data[1040..]);

    // Refused: nothing called, the closure dropped.
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    let bad = ExternalMemory {
        address: src.address().unwrap() + 4000,
        bytes: 4096, // past the allocation
        host: false,
        release: Some(Box::new(move || {
            d.fetch_add(1, Ordering::SeqCst);
        })),
    };
    // SAFETY: refused, nothing wrapped.
    let e = unsafe { rt.wrap_external(bad) }.unwrap_err();
    assert_eq!((e.status, e.call), (Status::ERANGE, "buffer_wrap_external"));
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    assert_eq!(Arc::strong_count(&dropped), 1); // the closure went with the refusal

    // Pinned host memory as a buffer (T4A_EXTERNAL_HOST).
    let mut hb = rt.host_alloc(4096, false).unwrap();
    hb.as_mut_slice().copy_from_slice(&data);
    let host = ExternalMemory {
        address: hb.as_slice().as_ptr() as u64,
        bytes: 4096,
        host: true,
        release: None,
    };
    // SAFETY: `hb` outlives the buffer's work (synchronized before it drops).
    let hext = unsafe { rt.wrap_external(host) }.unwrap();
    let t = hext.dlpack(&TensorView::new(DataType::U8, &[4096])).unwrap();
    assert_eq!(t.device(), (sys::T4A_DL_CUDA_HOST, 0));
    drop(t);
    let m = module(&rt);
    let f = m.function("t4a_fill_u32").unwrap();
    fill(&rt, &f, &hext, 0x0102_0304, 100); // the device writes the host memory
    rt.synchronize().unwrap();
    assert!(hb.as_slice()[..400].chunks(4).all(|w| w == 0x0102_0304u32.to_ne_bytes()));
    assert_eq!(&hb.as_slice()[400..], &data[400..]);
    drop(hext);
    rt.synchronize().unwrap();
}

/// The driver the backend loaded (for a consumer's CUevent), or None.
fn driver_symbol(b: &Backend, name: &str) -> Option<*mut std::os::raw::c_void> {
    extern "C" {
        fn dlopen(file: *const std::os::raw::c_char, mode: i32) -> *mut std::os::raw::c_void;
        fn dlsym(
            h: *mut std::os::raw::c_void,
            name: *const std::os::raw::c_char,
        ) -> *mut std::os::raw::c_void;
    }
    const RTLD_NOW: i32 = 2;
    const RTLD_NOLOAD: i32 = 4;
    let path = std::ffi::CString::new(b.info().ok()?.driver_path).ok()?;
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: C strings; NOLOAD only finds the library the plugin loaded.
    unsafe {
        let h = dlopen(path.as_ptr(), RTLD_NOW | RTLD_NOLOAD);
        if h.is_null() {
            return None;
        }
        let s = dlsym(h, name.as_ptr());
        (!s.is_null()).then(|| s)
    }
}

#[test]
fn consumer_streams_and_events_order_work() {
    let b = backend!("consumer_streams_and_events_order_work");
    let (rt, other) = (b.runtime(0).unwrap(), b.runtime(0).unwrap());
    let consumer = other.stream().unwrap(); // another framework's stream
    assert!(!consumer.as_raw().is_null());
    rt.wait_stream(consumer).unwrap();
    rt.wait_stream(Stream::LEGACY).unwrap();
    rt.wait_stream(Stream::PER_THREAD).unwrap();
    let data = pattern(1 << 16, 4);
    let buf = rt.alloc(1 << 16).unwrap();
    buf.write(0, &data).unwrap();
    let w = rt.seal().unwrap();
    rt.order_stream_after(consumer, &w).unwrap();
    other.wait_for(&w).unwrap();
    let copy = other.alloc(1 << 16).unwrap();
    copy.copy_from(0, &buf, 0, 1 << 16).unwrap();
    let mut got = vec![0u8; 1 << 16];
    copy.read(0, &mut got).unwrap();
    assert!(got == data, "the data differs");
    // SAFETY: NULL is no event: refused.
    let e = rt.wait_event(unsafe { Event::from_raw(std::ptr::null_mut()) }).unwrap_err();
    assert_eq!((e.status, e.call), (Status::EINVAL, "runtime_wait_event"));

    // A consumer's CUevent, made with the driver the backend loaded.
    type Create = unsafe extern "C" fn(*mut *mut std::os::raw::c_void, u32) -> i32;
    type Record = unsafe extern "C" fn(*mut std::os::raw::c_void, *mut std::os::raw::c_void) -> i32;
    type Destroy = unsafe extern "C" fn(*mut std::os::raw::c_void) -> i32;
    let (create, record, destroy) = match (
        driver_symbol(&b, "cuEventCreate"),
        driver_symbol(&b, "cuEventRecord"),
        driver_symbol(&b, "cuEventDestroy_v2"),
    ) {
        (Some(c), Some(r), Some(d)) => (c, r, d),
        _ => {
            common::note("consumer_streams_and_events_order_work", "no cuEvent* in the driver");
            return;
        }
    };
    // SAFETY: the driver's own entry points, with their prototypes, called
    // with the consumer runtime's context current (raw_begin).
    unsafe {
        let (create, record, destroy): (Create, Record, Destroy) = (
            std::mem::transmute(create),
            std::mem::transmute(record),
            std::mem::transmute(destroy),
        );
        let section = other.raw_begin().unwrap();
        let mut ev = std::ptr::null_mut();
        assert_eq!(create(&mut ev, 0), 0);
        assert_eq!(record(ev, consumer.as_raw()), 0);
        section.end().unwrap();
        rt.wait_event(Event::from_raw(ev)).unwrap();
        rt.synchronize().unwrap();
        let section = other.raw_begin().unwrap();
        assert_eq!(destroy(ev), 0);
        section.end().unwrap();
    }
}

#[test]
fn dlpack_exports_and_imports_without_copies() {
    let b = backend!("dlpack_exports_and_imports_without_copies");
    let (rt, other) = (b.runtime(0).unwrap(), b.runtime(0).unwrap());
    let n = 1024usize;
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let buf = rt.alloc(4 * n as u64 + 256).unwrap();
    buf.write(256, &data).unwrap();
    let base = buf.address().unwrap();

    // The legacy form, row-major: data is element 0.
    let mut view = TensorView::new(DataType::U32, &[32, 32]);
    view.offset = 256;
    let t = buf.dlpack(&view).unwrap();
    assert!(!t.is_versioned() && t.version_and_flags().is_none());
    assert_eq!((t.data(), t.byte_offset()), (base + 256, 0));
    assert_eq!(t.device(), (sys::T4A_DL_CUDA, 0));
    assert_eq!((t.shape(), t.strides()), (&[32i64, 32][..], &[32i64, 1][..]));
    assert_eq!(t.dtype(), DataType::U32);
    // Imported into another runtime (ordered after the writer's work): the
    // same memory, read bit for bit.
    other.wait_for(&rt.seal().unwrap()).unwrap();
    let imported = other.dlpack_import(t, false).unwrap();
    assert_eq!((imported.address().unwrap(), imported.len(), imported.offset()), (base + 256, 4096, 0));
    let mut got = vec![0u32; n];
    imported.read(0, &mut got).unwrap();
    assert!(got == data, "the data differs");
    imported.memset(0, 0x5a5a_5a5a, 4, 1).unwrap();
    imported.free().unwrap();
    let mut first = [0u32; 1];
    buf.read(256, &mut first).unwrap();
    assert_eq!(first, [0x5a5a_5a5a]);

    // Versioned, read-only, negative strides, the spec's byte_offset form;
    // on_delete runs once when the tensor goes.
    let deleted = Arc::new(AtomicUsize::new(0));
    let d = deleted.clone();
    let view = TensorView {
        dtype: DataType::I16,
        shape: vec![3, 5],
        strides: Some(vec![-5, 1]),
        offset: 100,
        versioned: true,
        read_only: true,
        byte_offset: true,
    };
    let t = buf
        .dlpack_with(
            &view,
            Some(Box::new(move || {
                d.fetch_add(1, Ordering::SeqCst);
            })),
        )
        .unwrap();
    assert_eq!(
        t.version_and_flags(),
        Some((
            (sys::T4A_DLPACK_MAJOR as u32, sys::T4A_DLPACK_MINOR as u32),
            sys::T4A_DL_FLAG_READ_ONLY
        ))
    );
    assert_eq!((t.data(), t.byte_offset()), (base, 100));
    assert_eq!(t.strides(), &[-5, 1]);
    drop(t);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    // A read-only tensor is refused unless allowed; refused, it drops (its
    // deleter runs); allowed, the buffer spans its elements.
    let d = deleted.clone();
    let t = buf
        .dlpack_with(
            &view,
            Some(Box::new(move || {
                d.fetch_add(1, Ordering::SeqCst);
            })),
        )
        .unwrap();
    let e = other.dlpack_import(t, false).unwrap_err();
    assert_eq!((e.status, e.call), (Status::EINVAL, "dlpack_import"));
    assert_eq!(deleted.load(Ordering::SeqCst), 2);
    let t = buf.dlpack(&view).unwrap();
    let ro = other.dlpack_import(t, true).unwrap();
    // rows -5 elements apart from element 0 at byte 100: rows start at
    // 100 - 10 * 2 = 80 (row 2) ... 100 + 8 (row 0, 5 elements)
    assert_eq!((ro.address().unwrap(), ro.len(), ro.offset()), (base + 80, 30, 20));
    drop(ro);

    // Refusals of the export: a bad dtype, elements outside, strides that
    // do not match the extents (here, before any call).
    let bad = TensorView::new(DataType { code: 200, bits: 8, lanes: 1 }, &[4]);
    assert_eq!(buf.dlpack(&bad).unwrap_err().status, Status::EINVAL);
    let big = TensorView::new(DataType::F64, &[1 << 20]);
    assert_eq!(buf.dlpack(&big).unwrap_err().status, Status::ERANGE);
    let mut mismatched = TensorView::new(DataType::U8, &[4, 4]);
    mismatched.strides = Some(vec![1]);
    assert_eq!(buf.dlpack(&mismatched).unwrap_err().status, Status::EINVAL);
    // Handed to a consumer as a raw pointer, whose deleter it calls.
    let raw = buf.dlpack(&TensorView::new(DataType::U8, &[16])).unwrap().into_raw();
    // SAFETY: the legacy form's managed tensor; its deleter called once.
    unsafe {
        let m = raw as *mut sys::t4a_dl_managed_tensor;
        assert_eq!((*m).dl_tensor.data as u64, base);
        ((*m).deleter.unwrap())(m);
    }
}
