//! Colourings of sparsity patterns: which columns (or rows) of a Jacobian can share one seed
//! direction, and which columns of a symmetric Hessian can share one Hessian-vector product
//! while every entry is still read off directly.
//!
//! - **Columns** (Curtis–Powell–Reid): columns j and k may share a colour when no row has an
//!   entry in both, i.e. a distance-2 colouring of the bipartite row/column graph, which is a
//!   proper colouring of the column intersection graph. Each colour is one JVP direction; entry
//!   `(i, j)` is row `i` of the product for colour `c(j)`. **Rows** likewise, by VJPs.
//! - **Star** (Gebremedhin, Manne, Pothen 2005), for a symmetric pattern: adjacent vertices
//!   differ and every path on four vertices uses at least three colours. Then for every
//!   off-diagonal entry `(i, j)` either `(H·s_c(j))ᵢ = H_ij` or `(H·s_c(i))_j = H_ij`
//!   ([`star_recovery`] says which), so every entry is one number of one product.
//!
//! Colourings are greedy over a vertex order; [`Ordering`] lists the orders tried (natural,
//! largest-first, smallest-last, incidence-degree) and the `best_*` functions keep the fewest
//! colours. The valid-colouring checks ([`is_column_coloring`], [`is_star_coloring`]) are
//! independent of the algorithms and are what the property tests call.

use std::fmt;

use crate::sparsity::SparsityPattern;

/// The vertex order a greedy colouring visits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ordering {
    /// Index order.
    Natural,
    /// By decreasing degree.
    LargestFirst,
    /// Repeatedly set aside a vertex of smallest remaining degree; colour in reverse.
    SmallestLast,
    /// Next, the vertex with the most already-ordered neighbours.
    IncidenceDegree,
    /// Dynamic: next, the uncoloured vertex whose neighbours already use the most distinct
    /// colours (saturation; ties by degree), Brélaz's DSATUR.
    Saturation,
    /// By increasing degree, so hubs come last. Not in [`Ordering::ALL`]: the star colouring's
    /// fallback when every other order would cost hub degree² ([`best_star_coloring`]).
    SmallestFirst,
}

impl Ordering {
    pub const ALL: [Ordering; 5] = [
        Ordering::Natural,
        Ordering::LargestFirst,
        Ordering::SmallestLast,
        Ordering::IncidenceDegree,
        Ordering::Saturation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Ordering::Natural => "natural",
            Ordering::LargestFirst => "largest-first",
            Ordering::SmallestLast => "smallest-last",
            Ordering::IncidenceDegree => "incidence-degree",
            Ordering::Saturation => "saturation",
            Ordering::SmallestFirst => "smallest-first",
        }
    }
}

impl fmt::Display for Ordering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a colouring colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColoringKind {
    /// Jacobian columns (one forward direction per colour).
    Columns,
    /// Jacobian rows (one reverse direction per colour).
    Rows,
    /// The columns of a symmetric Hessian, star-coloured (one Hessian-vector product per
    /// colour, direct recovery).
    Star,
}

impl ColoringKind {
    pub fn name(self) -> &'static str {
        match self {
            ColoringKind::Columns => "columns",
            ColoringKind::Rows => "rows",
            ColoringKind::Star => "star",
        }
    }
}

/// A colouring of a pattern's columns or rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coloring {
    pub kind: ColoringKind,
    /// The order that gave it.
    pub ordering: Ordering,
    /// The colour (`0..n_colors`) of every column ([`ColoringKind::Columns`],
    /// [`ColoringKind::Star`]) or row ([`ColoringKind::Rows`]).
    pub colors: Vec<u32>,
    pub n_colors: usize,
    /// The densest row (columns, star) or column (rows): for column and row colourings, a
    /// lower bound on the colours any colouring needs.
    pub densest: usize,
}

impl Coloring {
    fn new(kind: ColoringKind, ordering: Ordering, colors: Vec<u32>, densest: usize) -> Coloring {
        let n_colors = colors.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        Coloring {
            kind,
            ordering,
            colors,
            n_colors,
            densest,
        }
    }

    /// The members of each colour, in index order.
    pub fn classes(&self) -> Vec<Vec<u32>> {
        let mut classes = vec![Vec::new(); self.n_colors];
        for (v, &c) in self.colors.iter().enumerate() {
            classes[c as usize].push(v as u32);
        }
        classes
    }
}

/// Beyond this many (row, column, column) triples the column intersection graph is not built
/// and only the natural order is tried, straight on the pattern.
const GRAPH_BUDGET: usize = 30_000_000;

/// A greedy column colouring of `pattern` in `ordering`.
pub fn color_columns(pattern: &SparsityPattern, ordering: Ordering) -> Coloring {
    let densest = pattern.max_row_len();
    if densest == pattern.ncols() {
        // A dense row: every column needs a colour of its own, and any order gives that. Walking
        // the dense row once per column (or building its complete graph) would cost n².
        let colors = (0..pattern.ncols() as u32).collect();
        return Coloring::new(ColoringKind::Columns, ordering, colors, densest);
    }
    let colors = match intersection_graph(pattern) {
        Some(graph) => {
            let first = match ordering {
                Ordering::Saturation => saturation(&graph),
                other => greedy(&graph, &order(&graph, other)),
            };
            // At the lower bound already: recolouring keeps only a strictly better result.
            if first.iter().all(|&c| (c as usize) < densest) {
                first
            } else {
                recolor(first, |o| greedy(&graph, o))
            }
        }
        None => greedy_implicit(pattern),
    };
    let ordering = if triples(pattern) > GRAPH_BUDGET {
        Ordering::Natural
    } else {
        ordering
    };
    Coloring::new(ColoringKind::Columns, ordering, colors, densest)
}

/// A greedy row colouring of `pattern` in `ordering` (the column colouring of its transpose).
pub fn color_rows(pattern: &SparsityPattern, ordering: Ordering) -> Coloring {
    let mut c = color_columns(&pattern.transpose(), ordering);
    c.kind = ColoringKind::Rows;
    c
}

/// The column colouring with the fewest colours over every [`Ordering`] (the first on ties).
pub fn best_column_coloring(pattern: &SparsityPattern) -> Coloring {
    best(
        |o| color_columns(pattern, o),
        triples(pattern) > GRAPH_BUDGET,
    )
}

/// The row colouring with the fewest colours over every [`Ordering`] (the first on ties).
pub fn best_row_coloring(pattern: &SparsityPattern) -> Coloring {
    let t = pattern.transpose();
    let mut c = best(|o| color_columns(&t, o), triples(&t) > GRAPH_BUDGET);
    c.kind = ColoringKind::Rows;
    c
}

/// A greedy star colouring of the symmetric `pattern` (the diagonal is ignored) in `ordering`.
///
/// # Panics
/// When `pattern` is not square.
pub fn color_star(pattern: &SparsityPattern, ordering: Ordering) -> Coloring {
    assert_eq!(
        pattern.nrows(),
        pattern.ncols(),
        "a star colouring needs a square pattern"
    );
    let graph = adjacency(pattern);
    let colors = recolor(greedy_star(&graph, &order(&graph, ordering)), |o| {
        greedy_star(&graph, o)
    });
    Coloring::new(ColoringKind::Star, ordering, colors, pattern.max_row_len())
}

/// The star colouring with the fewest colours over every [`Ordering`] (the first on ties)
/// whose greedy pass costs at most `star_budget`: `greedy_star` scans the neighbours of
/// every coloured neighbour, so an order that colours a hub (an arrowhead's dense row) early
/// costs hub degree × degree, n² — smallest-last, which colours it last, stays linear.
/// When every order is over budget, [`Ordering::SmallestFirst`] (hubs last), and over budget
/// too, smallest-last regardless.
pub fn best_star_coloring(pattern: &SparsityPattern) -> Coloring {
    assert_eq!(
        pattern.nrows(),
        pattern.ncols(),
        "a star colouring needs a square pattern"
    );
    let graph = adjacency(pattern);
    let budget = star_budget(&graph);
    let mut best: Option<Coloring> = None;
    for ordering in Ordering::ALL.into_iter().chain([Ordering::SmallestFirst]) {
        if ordering == Ordering::SmallestFirst && best.is_some() {
            break;
        }
        let first = order(&graph, ordering);
        if star_work(&graph, &first) > budget {
            continue;
        }
        let colors = recolor(greedy_star(&graph, &first), |o| {
            if star_work(&graph, o) > budget {
                // Never fewer colours than any colouring: recolouring stops here.
                (0..graph.len() as u32).collect()
            } else {
                greedy_star(&graph, o)
            }
        });
        let c = Coloring::new(ColoringKind::Star, ordering, colors, pattern.max_row_len());
        if best.as_ref().is_none_or(|b| c.n_colors < b.n_colors) {
            best = Some(c);
        }
    }
    best.unwrap_or_else(|| color_star(pattern, Ordering::SmallestLast))
}

/// The most work ([`star_work`]) one greedy star pass of [`best_star_coloring`] may take: a
/// few times the graph's size, plus a floor that every pattern of modest size stays under.
fn star_budget(graph: &[Vec<u32>]) -> usize {
    let edges: usize = graph.iter().map(Vec::len).sum();
    edges
        .saturating_add(graph.len())
        .saturating_mul(16)
        .saturating_add(1 << 24)
}

/// The neighbours [`greedy_star`] visits in `order`: for each vertex, the degrees of its
/// neighbours coloured before it.
fn star_work(graph: &[Vec<u32>], order: &[u32]) -> usize {
    let mut position = vec![0usize; graph.len()];
    for (k, &v) in order.iter().enumerate() {
        position[v as usize] = k;
    }
    let mut work = 0usize;
    for (k, &v) in order.iter().enumerate() {
        for &w in &graph[v as usize] {
            if position[w as usize] < k {
                work = work.saturating_add(graph[w as usize].len());
            }
        }
    }
    work
}

/// The column colouring (`color` of each order) with the fewest colours, the first on ties.
/// The search stops at the first that needs only [`Coloring::densest`] colours, the lower
/// bound: no later order can beat it, so the result is the full search's (a 2-D stencil's
/// natural order is optimal, and its other five orders took 0.9 s of a 600 × 600 grid).
fn best(mut color: impl FnMut(Ordering) -> Coloring, natural_only: bool) -> Coloring {
    let orders: &[Ordering] = if natural_only {
        &[Ordering::Natural]
    } else {
        &Ordering::ALL
    };
    let mut best: Option<Coloring> = None;
    for &o in orders {
        let c = color(o);
        let optimal = c.n_colors <= c.densest;
        if best.as_ref().is_none_or(|b| c.n_colors < b.n_colors) {
            best = Some(c);
        }
        if optimal {
            break;
        }
    }
    best.unwrap_or_else(|| color(Ordering::Natural))
}

/// Whether no two columns of one colour share a row (`colors`: one per column).
pub fn is_column_coloring(pattern: &SparsityPattern, colors: &[u32]) -> bool {
    if colors.len() != pattern.ncols() {
        return false;
    }
    let mut seen = vec![usize::MAX; colors.iter().map(|&c| c as usize + 1).max().unwrap_or(0)];
    (0..pattern.nrows()).all(|i| {
        pattern.row(i).iter().all(|&j| {
            let c = colors[j as usize] as usize;
            let fresh = seen[c] != i;
            seen[c] = i;
            fresh
        })
    })
}

/// Whether `colors` is a star colouring of the symmetric `pattern` (off-diagonal entries as
/// edges): no edge joins two vertices of one colour, and no path on four vertices uses only
/// two colours. Checked edge by edge: the middle edge (w, x) of a two-coloured path v–w–x–y
/// has a neighbour of w coloured like x and a neighbour of x coloured like w.
pub fn is_star_coloring(pattern: &SparsityPattern, colors: &[u32]) -> bool {
    if colors.len() != pattern.nrows() || pattern.nrows() != pattern.ncols() {
        return false;
    }
    let graph = adjacency(pattern);
    let count = NeighbourColours::new(&graph, colors);
    for w in 0..graph.len() {
        for &x in &graph[w] {
            let (cw, cx) = (colors[w], colors[x as usize]);
            if cw == cx {
                return false;
            }
            // Another neighbour of w coloured like x, and another of x coloured like w.
            let left = count.of(w, cx) >= 2;
            let right = count.of(x as usize, cw) >= 2;
            if left && right {
                return false;
            }
        }
    }
    true
}

/// How many neighbours of each vertex have each colour, for the pairs that occur: O(edges),
/// where scanning a hub's neighbours once per neighbour would be its degree squared.
struct NeighbourColours(std::collections::HashMap<(u32, u32), u32>);

impl NeighbourColours {
    fn new(graph: &[Vec<u32>], colors: &[u32]) -> NeighbourColours {
        let mut count = std::collections::HashMap::new();
        for (v, neighbours) in graph.iter().enumerate() {
            for &w in neighbours {
                *count.entry((v as u32, colors[w as usize])).or_insert(0) += 1;
            }
        }
        NeighbourColours(count)
    }

    fn of(&self, v: usize, color: u32) -> u32 {
        self.0.get(&(v as u32, color)).copied().unwrap_or(0)
    }
}

/// Where each entry of the lower triangle of a star-coloured symmetric Hessian is read: for
/// entry number `e` (CSR order of `pattern.lower_triangle()`), `(row, color)` means
/// `H[i][j] = (H·s_color)[row]`. `None` when `colors` is not a star colouring of `pattern`.
pub fn star_recovery(pattern: &SparsityPattern, colors: &[u32]) -> Option<Vec<(u32, u32)>> {
    if !is_star_coloring(pattern, colors) {
        return None;
    }
    let graph = adjacency(pattern);
    let count = NeighbourColours::new(&graph, colors);
    let lower = pattern.lower_triangle();
    // No neighbour of `row` but `other` has `color`.
    let unique = |row: usize, other: usize, color: u32| {
        let others = u32::from(row != other && colors[other] == color);
        count.of(row, color) == others
    };
    lower
        .entries()
        .map(|(i, j)| {
            let (ci, cj) = (colors[i], colors[j]);
            if i == j || unique(i, j, cj) {
                Some((i as u32, cj))
            } else if unique(j, i, ci) {
                Some((j as u32, ci))
            } else {
                None
            }
        })
        .collect()
}

/// At most this many rounds of [`recolor`].
const RECOLOR_ROUNDS: usize = 8;

/// Iterated greedy (Culberson): colour again visiting the vertices class by class, the
/// classes in reverse order and then largest first; keep a result with fewer colours, until
/// a round gains nothing. For a distance-1 colouring a class-by-class order never needs
/// more colours than the classes it visits, so this only ever helps; star colourings keep
/// whichever is smaller.
fn recolor(mut colors: Vec<u32>, mut greedy: impl FnMut(&[u32]) -> Vec<u32>) -> Vec<u32> {
    let count = |c: &[u32]| c.iter().map(|&k| k as usize + 1).max().unwrap_or(0);
    for _ in 0..RECOLOR_ROUNDS {
        let k = count(&colors);
        let mut classes: Vec<Vec<u32>> = vec![Vec::new(); k];
        for (v, &c) in colors.iter().enumerate() {
            classes[c as usize].push(v as u32);
        }
        let reversed: Vec<u32> = classes.iter().rev().flatten().copied().collect();
        let mut by_size = classes.clone();
        by_size.sort_by_key(|c| std::cmp::Reverse(c.len()));
        let largest: Vec<u32> = by_size.into_iter().flatten().collect();
        let candidates = [greedy(&reversed), greedy(&largest)];
        let Some(better) = candidates.into_iter().min_by_key(|c| count(c)) else {
            break;
        };
        if count(&better) >= k {
            break;
        }
        colors = better;
    }
    colors
}

/// Adjacency lists of the symmetric pattern without its diagonal.
fn adjacency(pattern: &SparsityPattern) -> Vec<Vec<u32>> {
    let sym = pattern.symmetrized();
    (0..sym.nrows())
        .map(|i| {
            sym.row(i)
                .iter()
                .copied()
                .filter(|&j| j as usize != i)
                .collect()
        })
        .collect()
}

/// Σ over rows of (entries in the row)²: the work of building the intersection graph.
fn triples(pattern: &SparsityPattern) -> usize {
    (0..pattern.nrows())
        .map(|i| pattern.row(i).len().saturating_mul(pattern.row(i).len()))
        .fold(0usize, usize::saturating_add)
}

/// The column intersection graph (columns adjacent when they share a row), or `None` when it
/// would cost more than [`GRAPH_BUDGET`].
fn intersection_graph(pattern: &SparsityPattern) -> Option<Vec<Vec<u32>>> {
    if triples(pattern) > GRAPH_BUDGET {
        return None;
    }
    let t = pattern.transpose();
    let mut mark = vec![u32::MAX; pattern.ncols()];
    let graph = (0..pattern.ncols())
        .map(|j| {
            let mut neighbours = Vec::new();
            mark[j] = j as u32;
            for &r in t.row(j) {
                for &k in pattern.row(r as usize) {
                    if mark[k as usize] != j as u32 {
                        mark[k as usize] = j as u32;
                        neighbours.push(k);
                    }
                }
            }
            neighbours
        })
        .collect();
    Some(graph)
}

/// The smallest colour not marked with `stamp`.
fn first_free(forbidden: &[usize], stamp: usize) -> u32 {
    forbidden
        .iter()
        .position(|&s| s != stamp)
        .unwrap_or(forbidden.len()) as u32
}

/// Greedy distance-1 colouring of `graph` in `order`.
fn greedy(graph: &[Vec<u32>], order: &[u32]) -> Vec<u32> {
    let n = graph.len();
    let mut colors = vec![u32::MAX; n];
    let mut forbidden = vec![usize::MAX; n + 1];
    for (step, &v) in order.iter().enumerate() {
        for &w in &graph[v as usize] {
            let c = colors[w as usize];
            if c != u32::MAX {
                forbidden[c as usize] = step;
            }
        }
        colors[v as usize] = first_free(&forbidden, step);
    }
    colors
}

/// Greedy column colouring in natural order straight on the pattern (no graph built).
fn greedy_implicit(pattern: &SparsityPattern) -> Vec<u32> {
    let t = pattern.transpose();
    let n = pattern.ncols();
    let mut colors = vec![u32::MAX; n];
    let mut forbidden = vec![usize::MAX; n + 1];
    for j in 0..n {
        for &r in t.row(j) {
            for &k in pattern.row(r as usize) {
                let c = colors[k as usize];
                if c != u32::MAX {
                    forbidden[c as usize] = j;
                }
            }
        }
        colors[j] = first_free(&forbidden, j);
    }
    colors
}

/// Beyond this degree, [`greedy_star`] forbids a colour at distance two without looking for
/// the two-coloured path that would make it necessary (always valid, sometimes one colour
/// more).
const STAR_SCAN_DEGREE: usize = 64;

/// Greedy star colouring of `graph` in `order`. A colour `a` is forbidden for `v` when a
/// neighbour has it, or when a coloured neighbour `w` (colour `b`) has another neighbour `x`
/// of colour `a` and colouring `v` with `a` would close a two-coloured path on four vertices:
/// `v–w–x–y` (x has a neighbour y ≠ w of colour b) or `u–v–w–x` (v has another neighbour u of
/// colour b). A path becomes two-coloured when its last vertex is coloured, as an end
/// (first case) or in the middle (second), so checking both at every step keeps every path
/// on four vertices three-coloured.
fn greedy_star(graph: &[Vec<u32>], order: &[u32]) -> Vec<u32> {
    let n = graph.len();
    let mut colors = vec![u32::MAX; n];
    let mut forbidden = vec![usize::MAX; n + 1];
    // How many neighbours of the current vertex have each colour.
    let mut count = vec![0u32; n + 1];
    for (step, &v) in order.iter().enumerate() {
        let v = v as usize;
        for &w in &graph[v] {
            let c = colors[w as usize];
            if c != u32::MAX {
                forbidden[c as usize] = step;
                count[c as usize] += 1;
            }
        }
        for &w in &graph[v] {
            let b = colors[w as usize];
            if b == u32::MAX {
                continue;
            }
            for &x in &graph[w as usize] {
                let a = colors[x as usize];
                if x as usize == v || a == u32::MAX || forbidden[a as usize] == step {
                    continue;
                }
                let x_neighbours = &graph[x as usize];
                let closes = count[b as usize] >= 2
                    || x_neighbours.len() > STAR_SCAN_DEGREE
                    || x_neighbours
                        .iter()
                        .any(|&y| y != w && colors[y as usize] == b);
                if closes {
                    forbidden[a as usize] = step;
                }
            }
        }
        for &w in &graph[v] {
            let c = colors[w as usize];
            if c != u32::MAX {
                count[c as usize] = 0;
            }
        }
        colors[v] = first_free(&forbidden, step);
    }
    colors
}

/// The vertices of `graph` in `ordering`.
fn order(graph: &[Vec<u32>], ordering: Ordering) -> Vec<u32> {
    let n = graph.len();
    match ordering {
        Ordering::Natural => (0..n as u32).collect(),
        Ordering::LargestFirst => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&v| std::cmp::Reverse(graph[v as usize].len()));
            order
        }
        Ordering::SmallestFirst => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&v| graph[v as usize].len());
            order
        }
        Ordering::SmallestLast => smallest_last(graph),
        Ordering::IncidenceDegree => incidence_degree(graph),
        // The colouring order of DSATUR, replayed.
        Ordering::Saturation => {
            let colors = saturation(graph);
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&v| colors[v as usize]);
            order
        }
    }
}

/// DSATUR: colour next the uncoloured vertex with the most distinct colours among its
/// neighbours (then the largest degree, then the smallest index), with the smallest free
/// colour. A lazy max-heap keyed by (saturation, degree); O((V + E) log V).
fn saturation(graph: &[Vec<u32>]) -> Vec<u32> {
    use std::collections::BinaryHeap;
    let n = graph.len();
    let mut colors = vec![u32::MAX; n];
    // The distinct colours next to each vertex, as a bit set.
    let mut seen: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut sat = vec![0usize; n];
    let mut heap: BinaryHeap<(usize, usize, std::cmp::Reverse<u32>)> = (0..n)
        .map(|v| (0, graph[v].len(), std::cmp::Reverse(v as u32)))
        .collect();
    let mut forbidden = vec![usize::MAX; n + 1];
    let mut step = 0;
    while let Some((s, _, std::cmp::Reverse(v))) = heap.pop() {
        let v = v as usize;
        if colors[v] != u32::MAX || s != sat[v] {
            continue;
        }
        for &w in &graph[v] {
            let c = colors[w as usize];
            if c != u32::MAX {
                forbidden[c as usize] = step;
            }
        }
        let c = first_free(&forbidden, step);
        step += 1;
        colors[v] = c;
        let (word, bit) = (c as usize / 64, 1u64 << (c % 64));
        for &w in &graph[v] {
            let w = w as usize;
            if colors[w] != u32::MAX {
                continue;
            }
            if seen[w].len() <= word {
                seen[w].resize(word + 1, 0);
            }
            if seen[w][word] & bit == 0 {
                seen[w][word] |= bit;
                sat[w] += 1;
                heap.push((sat[w], graph[w].len(), std::cmp::Reverse(w as u32)));
            }
        }
    }
    colors
}

/// Degeneracy order: remove a vertex of smallest remaining degree until none is left, and
/// colour in the reverse order of removal. Bucket queue, O(V + E).
fn smallest_last(graph: &[Vec<u32>]) -> Vec<u32> {
    let n = graph.len();
    let mut degree: Vec<usize> = graph.iter().map(Vec::len).collect();
    let max_degree = degree.iter().copied().max().unwrap_or(0);
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); max_degree + 1];
    for (v, &d) in degree.iter().enumerate() {
        buckets[d].push(v as u32);
    }
    let mut removed = vec![false; n];
    let mut removal = Vec::with_capacity(n);
    let mut low = 0;
    while removal.len() < n {
        // Lazy deletion: a vertex may sit in several buckets; only its current one counts.
        let Some(v) = buckets[low].pop() else {
            low += 1;
            continue;
        };
        let v = v as usize;
        if removed[v] || degree[v] != low {
            continue;
        }
        removed[v] = true;
        removal.push(v as u32);
        for &w in &graph[v] {
            let w = w as usize;
            if !removed[w] {
                degree[w] -= 1;
                buckets[degree[w]].push(w as u32);
                low = low.min(degree[w]);
            }
        }
    }
    removal.reverse();
    removal
}

/// Incidence-degree order: start from a vertex of largest degree, then repeatedly take the
/// vertex with the most already-ordered neighbours. Bucket queue, O(V + E).
fn incidence_degree(graph: &[Vec<u32>]) -> Vec<u32> {
    let n = graph.len();
    let max_degree = graph.iter().map(Vec::len).max().unwrap_or(0);
    let mut incidence = vec![0usize; n];
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); max_degree + 1];
    // Within a bucket, vertices of larger degree are popped first.
    let mut by_degree: Vec<u32> = (0..n as u32).collect();
    by_degree.sort_by_key(|&v| graph[v as usize].len());
    buckets[0] = by_degree;
    let mut ordered = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut high = 0;
    while order.len() < n {
        let Some(v) = buckets[high].pop() else {
            if high == 0 {
                break;
            }
            high -= 1;
            continue;
        };
        let v = v as usize;
        if ordered[v] || incidence[v] != high {
            continue;
        }
        ordered[v] = true;
        order.push(v as u32);
        for &w in &graph[v] {
            let w = w as usize;
            if !ordered[w] {
                incidence[w] += 1;
                buckets[incidence[w]].push(w as u32);
                high = high.max(incidence[w]);
            }
        }
    }
    order
}
