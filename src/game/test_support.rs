//! Test-only helpers shared by the rules' and engines' unit tests: the one deterministic PRNG
//! they draw from (dependency-free, so the rules stay free of `rand`), the junk texts fed to
//! their parsers, and Connect6 positions built from lists of stones.

use super::Rules;

/// A tiny deterministic PRNG (xorshift64*): the same seed gives the same sequence on every run.
pub(crate) struct Prng(u64);

impl Prng {
    /// A generator started from `seed`, which must not be 0 (xorshift would stay at 0 for ever).
    pub(crate) fn new(seed: u64) -> Prng {
        assert_ne!(seed, 0, "an xorshift seed must not be 0");
        Prng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`; `n` must not be 0.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Characters that the board games' texts use, their near misses, and a few that no grammar has
/// (non-ASCII, NUL, tab).
pub(crate) const JUNK_ALPHABET: &[char] = &[
    'x', 'o', '.', '/', ' ', '=', ',', '0', '1', '9', 'A', 'j', 'S', 's', 'w', 'a', 'p', 'é',
    '\u{0}', '\t', '-',
];

/// A random text of fewer than `len_below` characters drawn from `alphabet`.
pub(crate) fn junk_text(rng: &mut Prng, alphabet: &[char], len_below: usize) -> String {
    let len = rng.below(len_below);
    (0..len)
        .map(|_| alphabet[rng.below(alphabet.len())])
        .collect()
}

/// `valid` after 1-3 random edits, each replacing, removing or inserting (also at the end) one
/// character drawn from `alphabet`.
pub(crate) fn edited_text(rng: &mut Prng, valid: &str, alphabet: &[char]) -> String {
    let mut chars: Vec<char> = valid.chars().collect();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(chars.len() + 1);
        match rng.below(3) {
            0 if at < chars.len() => chars[at] = alphabet[rng.below(alphabet.len())],
            1 if at < chars.len() => {
                chars.remove(at);
            }
            _ => chars.insert(at, alphabet[rng.below(alphabet.len())]),
        }
    }
    chars.into_iter().collect()
}

/// Feeds `text` to both parsers of `R` and checks what they say: an error names a problem at a
/// character position inside the text or just past it; what parses writes itself back as text
/// that reads back equal.
pub(crate) fn check_parsers_on<R: Rules + PartialEq>(text: &str, options: &R::Options) {
    let limit = text.chars().count() + 1;
    match R::from_position_text(text, options) {
        Ok(position) => {
            let again = position.position_text();
            assert_eq!(
                R::from_position_text(&again, options).as_ref(),
                Ok(&position),
                "{text:?} read as {again:?}"
            );
        }
        Err(e) => assert!(
            e.at >= 1 && e.at <= limit && !e.what.is_empty(),
            "{text:?}: {e}"
        ),
    }
    match R::parse_move(text) {
        Ok(m) => assert_eq!(R::parse_move(&m.to_string()), Ok(m), "{text:?}"),
        Err(e) => assert!(
            e.at >= 1 && e.at <= limit && !e.what.is_empty(),
            "{text:?}: {e}"
        ),
    }
}

#[test]
fn prng_is_xorshift64_star() {
    // The first outputs for seed 1, computed by hand from the published algorithm.
    let mut rng = Prng::new(1);
    let state = 1u64 ^ (1 << 25);
    let state = state ^ (state >> 27);
    assert_eq!(rng.next_u64(), state.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut seen = std::collections::HashSet::new();
    for _ in 0..1000 {
        assert!(seen.insert(rng.next_u64()));
    }
}

#[test]
fn junk_texts_stay_in_bounds_and_use_the_alphabet() {
    let mut rng = Prng::new(7);
    let mut lengths = std::collections::HashSet::new();
    for _ in 0..2000 {
        let text = junk_text(&mut rng, &['a', 'b'], 5);
        assert!(text.chars().all(|c| c == 'a' || c == 'b'), "{text:?}");
        lengths.insert(text.len());
    }
    assert_eq!(lengths, (0..5).collect());
    let mut shorter = false;
    let mut longer = false;
    let mut unchanged = 0;
    for _ in 0..2000 {
        let text = edited_text(&mut rng, "xyzw", &['a']);
        // An insertion can be undone by a later removal, but seldom.
        unchanged += usize::from(text == "xyzw");
        let n = text.chars().count();
        assert!((1..=7).contains(&n), "{text:?}");
        shorter |= n < 4;
        longer |= n > 4;
        // Every character is either from the valid text or from the alphabet.
        assert!(text.chars().all(|c| "xyzwa".contains(c)), "{text:?}");
    }
    assert!(shorter && longer);
    assert!(unchanged < 200, "{unchanged}");
    // Edits of an empty text can only insert.
    assert_eq!(
        edited_text(&mut rng, "", &['a']).trim_start_matches('a'),
        ""
    );
}

/// A Connect6 position with the given stones (point names such as `J10`), `turn` (`x` for
/// Black, `o` for White) to move with `stones` still to place this turn.
pub(crate) fn connect6_position(
    black: &[&str],
    white: &[&str],
    turn: char,
    stones: u8,
) -> super::connect6::Connect6 {
    use super::connect6::{Connect6, Options, SIZE};
    let mut grid = [['.'; SIZE as usize]; SIZE as usize];
    for (list, ch) in [(black, 'x'), (white, 'o')] {
        for s in list {
            let p = super::coord::parse_point(s, SIZE).expect("a point on the board");
            grid[p.row as usize][p.col as usize] = ch;
        }
    }
    let rows: Vec<String> = grid.iter().rev().map(|r| r.iter().collect()).collect();
    let text = format!("{} {turn} stones={stones}", rows.join("/"));
    Connect6::from_position_text(&text, &Options::default()).expect("a valid position")
}
