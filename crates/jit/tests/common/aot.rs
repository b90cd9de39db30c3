//! The AOT suite shared by `aot.rs` (x86-64, host gcc) and `aarch64.rs` (cross gcc + qemu):
//! compile many programs to objects with distinct symbols, link them with one C driver that
//! reads `(program index, inputs)` records from stdin and writes outputs to stdout (binary
//! doubles), run it once, and compare with the interpreter (with the host's JIT code for
//! programs compiled with inline math).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use adjit_ir::random::{random_function, RandomOptions, Rng};
use adjit_ir::{interpret, mathlib, BinaryOp, Function, InstData, Rolled, Type};
use adjit_jit::{
    compile, compile_object, compile_object_rolled, compile_templates, JitOptions, MathImpl,
    ObjectCode,
};

use super::{every_opcode, seed001, special_values};

/// A toolchain for one target.
pub struct Toolchain {
    pub triple: &'static str,
    pub cc: &'static str,
    /// Program (and leading arguments) that runs the linked driver, if not native.
    pub runner: Option<(&'static str, &'static [&'static str])>,
}

/// Whether `program --version` runs.
fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether every tool is present; otherwise print a SKIP note, or fail when
/// `ADJIT_REQUIRE_QEMU=1`.
pub fn tools_present(tc: &Toolchain) -> bool {
    let mut missing: Vec<&str> = Vec::new();
    if !available(tc.cc) {
        missing.push(tc.cc);
    }
    if let Some((runner, _)) = tc.runner {
        if !available(runner) {
            missing.push(runner);
        }
    }
    if missing.is_empty() {
        return true;
    }
    let required = std::env::var("ADJIT_REQUIRE_QEMU").is_ok_and(|v| v == "1");
    assert!(!required, "ADJIT_REQUIRE_QEMU=1 but missing: {missing:?}");
    eprintln!("SKIP {}: missing {missing:?} (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)", tc.triple);
    false
}

/// Per output: whether a math-library call lies in its dependency cone (then results may
/// differ by rounding; otherwise they must be bit-identical). Under `MathImpl::Inline`, the
/// operations with a `mathlib` routine call nothing.
fn outputs_using_libm(func: &Function, math: MathImpl) -> Vec<bool> {
    let inline = math == MathImpl::Inline;
    let mut uses = vec![false; func.n_values()];
    for (v, inst) in func.insts() {
        let own = match inst {
            InstData::Unary { op, .. } => {
                op.is_transcendental() && !(inline && mathlib::has_unary(*op))
            }
            InstData::Binary { op, .. } => {
                matches!(op, BinaryOp::Pow | BinaryOp::Atan2)
                    && !(inline && mathlib::has_binary(*op))
            }
            _ => false,
        };
        let mut any = own;
        inst.for_each_value(|a| any |= uses[a.index()]);
        uses[v.index()] = any;
    }
    func.rets.iter().map(|r| uses[r.index()]).collect()
}

/// Distance in units in the last place of type `ty` (NaN = NaN is 0; NaN vs number is max).
fn ulps(a: f64, b: f64, ty: Type) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f64| -> i64 {
        let bits = match ty {
            Type::F32 => (x as f32).to_bits() as i64,
            _ => x.to_bits() as i64,
        };
        let sign = match ty {
            Type::F32 => 1i64 << 31,
            _ => i64::MIN,
        };
        if bits & sign != 0 {
            sign.wrapping_sub(bits)
        } else {
            bits
        }
    };
    key(a).wrapping_sub(key(b)).unsigned_abs()
}

/// The programs of the suite, with their input points.
pub fn suite_programs() -> Vec<(Function, Vec<Vec<f64>>)> {
    let mut programs = Vec::new();
    let specials = special_values();
    let special_points: Vec<Vec<f64>> = specials
        .iter()
        .enumerate()
        .flat_map(|(i, &x)| {
            specials
                .iter()
                .step_by(2)
                .map(move |&y| vec![x, y, (i % 2) as f64])
        })
        .collect();
    for ty in [Type::F64, Type::F32] {
        programs.push((every_opcode(ty), special_points.clone()));
    }
    let s = seed001();
    programs.push((s, vec![vec![1.5, -0.25], vec![0.0, 0.0], vec![-3.0, 7.0]]));
    for seed in 0..24u64 {
        let opts = RandomOptions {
            n_params: 1 + (seed % 3) as usize,
            n_insts: 60 + seed as usize * 10,
            n_outputs: 2,
            ty: if seed % 3 == 2 { Type::F32 } else { Type::F64 },
            window: 16,
            non_smooth: seed % 2 == 1,
        };
        let f = random_function(seed, &opts);
        let mut rng = Rng::new(seed);
        let points = (0..4).map(|_| rng.vector(f.n_params, -2.0, 2.0)).collect();
        programs.push((f, points));
    }
    // Repeated templates, rolled into loops (the suite searches programs of every size).
    for seed in 0..4u64 {
        let opts = adjit_ir::random::RepeatOptions {
            template: 6 + seed as usize,
            trips: 300,
            carried: 1 + (seed % 2) as usize,
            interrupt: [0, 7][(seed % 2) as usize],
            ty: if seed == 3 { Type::F32 } else { Type::F64 },
            non_smooth: seed % 2 == 1,
            // Seeds 2 and 3 (one of them f32): literals that change per iteration, in tables.
            data: seed >= 2,
        };
        let f = adjit_ir::random::random_repeated(seed, &opts);
        let mut rng = Rng::new(seed);
        let points = (0..2).map(|_| rng.vector(f.n_params, -2.0, 2.0)).collect();
        programs.push((f, points));
    }
    // 2-D grids, their rows nested into an outer loop around each row's loop (these two
    // nest when scheduled, the suite's default).
    for (seed, ty) in [(1u64, Type::F64), (8, Type::F32)] {
        let f = super::grid(seed, 7, 26, ty);
        let mut rng = Rng::new(seed);
        let points = (0..2).map(|_| rng.vector(f.n_params, -2.0, 2.0)).collect();
        programs.push((f, points));
        // The same grid with a source term: literal tables per row and between rows.
        let f = super::grid_with_data(seed, 7, 26, ty);
        let points = (0..2).map(|_| rng.vector(f.n_params, -2.0, 2.0)).collect();
        programs.push((f, points));
    }
    // A gradient's sums over data rows, run side by side in one loop (regroup.rs; scheduled,
    // 6 loops become 2, and 4 become 3); seed 7 is f32, and its last sum starts from the one
    // before (it must not join).
    for (seed, blocked) in [(0u64, false), (7, true)] {
        let f = super::reductions(seed, blocked);
        let mut rng = Rng::new(seed);
        let points = (0..2).map(|_| rng.vector(f.n_params, -2.0, 2.0)).collect();
        programs.push((f, points));
    }
    // Constants returned many times: filled by a loop over their span (plan.rs, `Fill`).
    for seed in 0..2u64 {
        let f = super::constant_outputs(seed);
        programs.push((f, vec![vec![1.5, -0.25], vec![3.0, 0.5]]));
    }
    // The example corpus, when present.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ir/examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
    {
        let text = std::fs::read_to_string(path).unwrap();
        let funcs = adjit_ir::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for f in funcs {
            let mut rng = Rng::new(f.n_values() as u64);
            let points = (0..3).map(|_| rng.vector(f.n_params, 0.1, 0.9)).collect();
            programs.push((f, points));
        }
    }
    programs
}

/// Compile, link, run and compare the whole suite; returns the largest ulp difference seen on
/// outputs that depend on math-library calls.
pub fn run_suite(tc: &Toolchain, opts_for: impl Fn(usize) -> JitOptions) -> u64 {
    let programs = suite_programs();
    let dir = std::env::temp_dir().join(format!("adjit_aot_{}_{}", tc.triple, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut options = Vec::new();
    let mut linked = Linked::default();
    let mut rolled = 0;
    for (i, (func, _)) in programs.iter().enumerate() {
        let mut func = func.clone();
        func.name = format!("p{i}_{}", func.name);
        // Every object also exports its two-point kernels (`SYMBOL_x2`), run on pairs below.
        let opts = JitOptions {
            batch_lanes: 2,
            // Programs of every size are searched for repetition (the repeated ones roll).
            roll_above: 0,
            ..opts_for(i)
        };
        if !adjit_jit::regions(&func, &opts).is_empty() {
            rolled += 1;
        }
        let obj = compile_object(&func, tc.triple, &opts)
            .unwrap_or_else(|e| panic!("@{}: {e}", func.name));
        options.push(opts);
        let pair = obj
            .pair_symbol
            .as_deref()
            .expect("batch_lanes = 2 exports pairs");
        let kernels = format!("{}, {pair}", obj.symbol);
        linked.add(&dir, &format!("p{i}"), &obj, &kernels);
    }
    let Linked {
        objects,
        includes,
        table,
        max_in,
        max_out,
        max_work,
    } = linked;
    let driver = format!(
        "#include <stdio.h>\n#include <stdint.h>\n{includes}\
         typedef void (*kernel)(const double *, double *, double *);\n\
         struct entry {{ kernel f, f2; unsigned n_in, n_out, work; }};\n\
         static const struct entry table[] = {{\n{table}}};\n\
         static double in[{max_in}], in_b[{max_in}], out[{max_out}], work[{max_work}];\n\
         static double pin[2 * {max_in}] __attribute__((aligned(16)));\n\
         static double pout[2 * {max_out}] __attribute__((aligned(16)));\n\
         static double pwork[2 * {max_work}] __attribute__((aligned(16)));\n\
         /* A record: program index, point a, point b. Writes f(a), then f2's lanes a and b. */\n\
         int main(void) {{\n\
           uint32_t idx;\n\
           while (fread(&idx, 4, 1, stdin) == 1) {{\n\
             const struct entry *e = &table[idx];\n\
             if (fread(in, 8, e->n_in, stdin) != e->n_in) return 2;\n\
             if (fread(in_b, 8, e->n_in, stdin) != e->n_in) return 2;\n\
             e->f(in, out, work);\n\
             fwrite(out, 8, e->n_out, stdout);\n\
             for (unsigned i = 0; i < e->n_in; i++) {{ pin[2 * i] = in[i]; pin[2 * i + 1] = in_b[i]; }}\n\
             e->f2(pin, pout, pwork);\n\
             for (unsigned j = 0; j < e->n_out; j++) fwrite(&pout[2 * j], 8, 1, stdout);\n\
             for (unsigned j = 0; j < e->n_out; j++) fwrite(&pout[2 * j + 1], 8, 1, stdout);\n\
           }}\n\
           return 0;\n\
         }}\n"
    );
    // The repeated programs are lowered as loops (most of them; an option set may not roll
    // a program whose runs are too short for it).
    assert!(
        rolled >= 3,
        "only {rolled} programs of the suite were rolled"
    );
    // Point `k` is lane a of its record and the next point (cyclically) lane b.
    let partner = |points: &[Vec<f64>], k: usize| (k + 1) % points.len();
    let mut stdin = Records::default();
    for (i, (_, points)) in programs.iter().enumerate() {
        for (k, x) in points.iter().enumerate() {
            stdin.push(i, x.iter().chain(&points[partner(points, k)]));
        }
    }
    let mut got = link_and_run(tc, &dir, &driver, &objects, stdin).into_iter();

    let mut max_ulps = 0;
    let mut checked = 0;
    for ((func, points), opts) in programs.iter().zip(&options) {
        let libm = outputs_using_libm(func, opts.math);
        let n_out = func.n_outputs();
        // Inline math is `mathlib`'s definition, which the host's JIT code equals bitwise
        // (tests/inline_math.rs): the reference then is the host JIT, the same tables and all.
        let host = (opts.math == MathImpl::Inline).then(|| {
            let scalar = JitOptions {
                batch_lanes: 1,
                ..opts.clone()
            };
            compile(func, &scalar).unwrap_or_else(|e| panic!("@{}: {e}", func.name))
        });
        let mut scalar: Vec<Vec<f64>> = Vec::new();
        let mut lanes: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
        for x in points {
            let want = match &host {
                Some(code) => {
                    let mut y = vec![0.0; n_out];
                    code.call(x, &mut y).unwrap();
                    y
                }
                None => interpret(func, x).unwrap(),
            };
            let mut mine = Vec::with_capacity(n_out);
            for (j, &w) in want.iter().enumerate() {
                let g = got.next().expect("driver wrote too few outputs");
                mine.push(g);
                let ty = func.ret_types[j];
                let d = ulps(g, w, ty);
                if libm[j] {
                    max_ulps = max_ulps.max(d);
                    assert!(
                        d <= 2,
                        "{}: @{} output {j} at {x:?}: object {g:e}, reference {w:e} ({d} ulps)",
                        tc.triple,
                        func.name
                    );
                } else {
                    assert!(
                        d == 0,
                        "{}: @{} output {j} at {x:?}: object {g:e}, reference {w:e} (must be exact)",
                        tc.triple,
                        func.name
                    );
                }
                checked += 1;
            }
            scalar.push(mine);
            let a: Vec<f64> = got.by_ref().take(n_out).collect();
            let b: Vec<f64> = got.by_ref().take(n_out).collect();
            assert_eq!(b.len(), n_out, "driver wrote too few pair outputs");
            lanes.push((a, b));
        }
        // Each lane of the two-point kernels is bitwise the scalar code at its point.
        for (k, (a, b)) in lanes.iter().enumerate() {
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let (sa, sb) = (&scalar[k], &scalar[partner(points, k)]);
            assert_eq!(
                bits(a),
                bits(sa),
                "{}: @{} pair lane 0, point {k}",
                tc.triple,
                func.name
            );
            assert_eq!(
                bits(b),
                bits(sb),
                "{}: @{} pair lane 1, point {k}",
                tc.triple,
                func.name
            );
            checked += 2 * n_out;
        }
    }
    assert!(got.next().is_none(), "driver wrote too many outputs");
    assert!(checked > 1000, "only {checked} outputs checked");
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "{}: {} programs, {checked} outputs checked, max {max_ulps} ulps on libm-dependent outputs",
        tc.triple,
        programs.len()
    );
    max_ulps
}

/// The rolled programs of the rolled suite, with their input points: random repeated programs
/// (carried values, strides, interruptions, data tables, f32) and their rolled JVP, VJP,
/// gradient and HVP (whose reverse sweeps fuse into their forward loops), and the traced
/// Rosenbrock's gradient and HVP.
pub fn rolled_suite_programs() -> Vec<(Rolled, Vec<Vec<f64>>)> {
    use adjit_diff::{jvp_rolled, vjp_rolled, vjp_rolled_seeded_with_one};
    use adjit_ir::random::{random_repeated, RepeatOptions};
    let mut programs = Vec::new();
    let mut add = |r: Rolled, seed: u64| {
        let mut rng = Rng::new(seed);
        let points = (0..2)
            .map(|_| rng.vector(r.n_params(), -2.0, 2.0))
            .collect();
        programs.push((r, points));
    };
    for seed in 0..8u64 {
        let f = random_repeated(seed, &RepeatOptions::of_seed(seed, seed % 2 == 1));
        let r = Rolled::from_function(&f);
        let seeded = vjp_rolled_seeded_with_one(&r);
        for p in [
            jvp_rolled(&r),
            vjp_rolled(&r),
            jvp_rolled(&seeded),
            seeded,
            r,
        ] {
            add(p, seed);
        }
    }
    let rosenbrock = Rolled::from_function(&adjit_testkit::chained_rosenbrock(600));
    let seeded = vjp_rolled_seeded_with_one(&rosenbrock);
    add(jvp_rolled(&seeded), 1);
    add(seeded, 2);
    programs
}

/// Compile every program of [`rolled_suite_programs`] from its templates to an object
/// (`compile_object_rolled`, options `opts_for(i)`), link them with one C driver, run it once
/// and compare with the interpreter of each expansion (with the host's code compiled from the
/// templates under inline math): bit-exact where no libm routine is involved, within 2 ulps
/// where one is. Returns how many objects held loops (were compiled from their templates).
pub fn run_rolled_suite(tc: &Toolchain, opts_for: impl Fn(usize) -> JitOptions) -> usize {
    let programs = rolled_suite_programs();
    let dir = std::env::temp_dir().join(format!(
        "adjit_aot_rolled_{}_{}",
        tc.triple,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut options = Vec::new();
    let mut linked = Linked::default();
    let mut from_templates = 0;
    for (i, (rolled, _)) in programs.iter().enumerate() {
        let opts = opts_for(i);
        let symbol = format!("adjit_r{i}");
        let obj = compile_object_rolled(rolled, tc.triple, &opts, &symbol)
            .unwrap_or_else(|e| panic!("@{}: {e}", rolled.header().name));
        // (Where the host compiles it from its templates, so does the object.)
        let held = compile_templates(rolled, &opts).unwrap_or_else(|e| panic!("{e}"));
        from_templates += usize::from(held.is_some());
        options.push(opts);
        linked.add(&dir, &format!("r{i}"), &obj, &obj.symbol);
    }
    let Linked {
        objects,
        includes,
        table,
        max_in,
        max_out,
        max_work,
    } = linked;
    let driver = format!(
        "#include <stdio.h>\n#include <stdint.h>\n{includes}\
         typedef void (*kernel)(const double *, double *, double *);\n\
         struct entry {{ kernel f; unsigned n_in, n_out, work; }};\n\
         static const struct entry table[] = {{\n{table}}};\n\
         static double in[{max_in}], out[{max_out}], work[{max_work}];\n\
         /* A record: program index, point. Writes f(point). */\n\
         int main(void) {{\n\
           uint32_t idx;\n\
           while (fread(&idx, 4, 1, stdin) == 1) {{\n\
             const struct entry *e = &table[idx];\n\
             if (fread(in, 8, e->n_in, stdin) != e->n_in) return 2;\n\
             e->f(in, out, work);\n\
             fwrite(out, 8, e->n_out, stdout);\n\
           }}\n\
           return 0;\n\
         }}\n"
    );
    let mut stdin = Records::default();
    for (i, (_, points)) in programs.iter().enumerate() {
        for x in points {
            stdin.push(i, x);
        }
    }
    let mut got = link_and_run(tc, &dir, &driver, &objects, stdin).into_iter();
    let mut checked = 0;
    for ((rolled, points), opts) in programs.iter().zip(&options) {
        let func = rolled.expand();
        let libm = outputs_using_libm(&func, opts.math);
        let host = (opts.math == MathImpl::Inline).then(|| {
            compile_templates(rolled, opts)
                .unwrap_or_else(|e| panic!("@{}: {e}", func.name))
                .unwrap_or_else(|| compile(&func, opts).expect("compiles"))
        });
        for x in points {
            let want = match &host {
                Some(code) => {
                    let mut y = vec![0.0; func.n_outputs()];
                    code.call(x, &mut y).unwrap();
                    y
                }
                None => interpret(&func, x).unwrap(),
            };
            for (j, &w) in want.iter().enumerate() {
                let g = got.next().expect("driver wrote too few outputs");
                let d = ulps(g, w, func.ret_types[j]);
                let most = if libm[j] { 2 } else { 0 };
                assert!(
                    d <= most,
                    "{}: @{} output {j}: object {g:e}, reference {w:e} ({d} ulps)",
                    tc.triple,
                    func.name
                );
                checked += 1;
            }
        }
    }
    assert!(got.next().is_none(), "driver wrote too many outputs");
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "{}: {} rolled programs ({from_templates} from their templates), {checked} outputs",
        tc.triple,
        programs.len()
    );
    from_templates
}

/// A driver's standard input: records of a program's index (`u32`) and its input numbers.
#[derive(Default)]
struct Records(Vec<u8>);

impl Records {
    fn push<'a>(&mut self, program: usize, values: impl IntoIterator<Item = &'a f64>) {
        self.0.extend((program as u32).to_le_bytes());
        for v in values {
            self.0.extend(v.to_le_bytes());
        }
    }
}

/// Link `driver` (C source) with `objects` in `dir` for `tc`, run it on `records` (kept beside
/// it as `input.bin`, to run it again by hand when it fails) and return the numbers it wrote;
/// the driver must succeed.
fn link_and_run(
    tc: &Toolchain,
    dir: &Path,
    driver: &str,
    objects: &[PathBuf],
    records: Records,
) -> Vec<f64> {
    let stdin = records.0;
    std::fs::write(dir.join("driver.c"), driver).unwrap();
    let exe = dir.join("driver");
    let status = Command::new(tc.cc)
        .arg("-O2")
        .arg("-o")
        .arg(&exe)
        .arg(dir.join("driver.c"))
        .args(objects)
        .arg("-lm")
        .status()
        .unwrap();
    assert!(status.success(), "{} failed to link the driver", tc.cc);
    std::fs::write(dir.join("input.bin"), &stdin).unwrap();
    let mut cmd = match tc.runner {
        Some((runner, args)) => {
            let mut c = Command::new(runner);
            c.args(args).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Written from another thread: the driver's output may fill the pipe before it has read
    // all of its input, and writing everything first would then wait forever.
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || input.write_all(&stdin));
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "driver failed: {:?}",
        output.status
    );
    writer.join().unwrap().unwrap();
    (output.stdout.chunks_exact(8))
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The options of the rolled suite's program `i`: every other one paired by force, every
/// third with adjit's inline math routines.
pub fn rolled_suite_options(i: usize) -> JitOptions {
    JitOptions {
        pair_loops: [adjit_jit::Pairing::Always, adjit_jit::Pairing::Auto][i % 2],
        math: [MathImpl::Auto, MathImpl::Auto, MathImpl::Inline][i % 3],
        ..JitOptions::default()
    }
}

/// The objects one driver links, its `#include`s and table of entries, and the largest
/// buffers they need (at least one `f64` each).
struct Linked {
    objects: Vec<PathBuf>,
    includes: String,
    table: String,
    max_in: usize,
    max_out: usize,
    max_work: usize,
}

impl Default for Linked {
    fn default() -> Linked {
        Linked {
            objects: Vec::new(),
            includes: String::new(),
            table: String::new(),
            max_in: 1,
            max_out: 1,
            max_work: 1,
        }
    }
}

impl Linked {
    /// Write `obj` as `NAME.o` and `NAME.h` in `dir`, and add its table entry: `kernels` (the
    /// entry's function pointers), then its sizes.
    fn add(&mut self, dir: &Path, name: &str, obj: &ObjectCode, kernels: &str) {
        let o = dir.join(format!("{name}.o"));
        std::fs::write(&o, &obj.bytes).unwrap();
        std::fs::write(dir.join(format!("{name}.h")), &obj.header).unwrap();
        self.objects.push(o);
        self.includes += &format!("#include \"{name}.h\"\n");
        let up = obj.symbol.to_ascii_uppercase();
        self.table += &format!("  {{{kernels}, {up}_N_INPUTS, {up}_N_OUTPUTS, {up}_WORK_LEN}},\n");
        self.max_in = self.max_in.max(obj.n_inputs);
        self.max_out = self.max_out.max(obj.n_outputs);
        self.max_work = self.max_work.max(obj.work_len);
    }
}
