//! Times the stages of building a sparse Hessian (analysis, colouring, transform, JIT).
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).expect("an .ir file");
    let mut f = adjit::load(std::path::Path::new(&path)).unwrap().remove(0);
    if std::env::var("STRIP").is_ok() {
        for v in f.values.iter_mut() {
            v.name = None;
        }
    }
    let t = Instant::now();
    let p = adjit::diff::sparsity::hessian_pattern(&f);
    eprintln!("pattern {:?}", t.elapsed());
    let t = Instant::now();
    let c = adjit::diff::sparsity::best_star_coloring(&p);
    eprintln!("coloring {:?} ({} colours)", t.elapsed(), c.n_colors);
    let t = Instant::now();
    let g0 = adjit::diff::derive::vjp_seeded_with_one(&f);
    eprintln!("vjp {:?} {}", t.elapsed(), g0.n_values());
    let mut cur = g0.clone();
    use adjit::diff::simplify::*;
    for round in 0..4 {
        let t = Instant::now();
        let a = fold(&cur);
        let t1 = t.elapsed();
        let t = Instant::now();
        let b = identities(&a);
        let t2 = t.elapsed();
        let t = Instant::now();
        let c2 = cse(&b);
        let t3 = t.elapsed();
        let t = Instant::now();
        let d = dce(&c2);
        let t4 = t.elapsed();
        eprintln!(
            "round {round}: fold {t1:?} id {t2:?} cse {t3:?} dce {t4:?} -> {}",
            d.n_values()
        );
        if d == cur {
            break;
        }
        cur = d;
    }
    let g = adjit::diff::simplify(&g0);
    let t = Instant::now();
    let j = adjit::diff::jvp_unit_seeded(&g, &c.colors, c.n_colors);
    eprintln!("jvp {:?} ({} values)", t.elapsed(), j.n_values());
    let t = Instant::now();
    let h = adjit::diff::sparsity::sparse_hessian(&f, &p, &c).unwrap();
    eprintln!(
        "sparse_hessian total {:?} ({} values)",
        t.elapsed(),
        h.n_values()
    );
    let t = Instant::now();
    let _code = adjit::jit::compile(&h, &Default::default()).unwrap();
    eprintln!("jit {:?}", t.elapsed());
}
