//! Sets of cells of the engine's padded 16×16 board as 256-bit masks, so that the evaluation
//! counts windows and neighbours of every point at once (a shift moves every cell to its
//! neighbour; the ring of walls keeps rows from wrapping into each other).

use std::ops::{BitAnd, BitOr, Not};

/// One bit per cell index of the padded board (bit `c` of word `c / 64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Bits([u64; 4]);

/// The 14×14 points of the board (rows and columns 1..=14 of the padded board).
pub(super) const ON_BOARD: Bits = {
    let mut words = [0u64; 4];
    let mut row = 1;
    while row <= 14 {
        let mut col = 1;
        while col <= 14 {
            let cell = row * 16 + col;
            words[cell / 64] |= 1 << (cell % 64);
            col += 1;
        }
        row += 1;
    }
    Bits(words)
};

impl Bits {
    /// Adds `cell` if absent, removes it if present.
    pub(super) fn toggle(&mut self, cell: u8) {
        self.0[usize::from(cell >> 6)] ^= 1 << (cell & 63);
    }

    /// The set whose cell `c` is this set's cell `c + n` (cells past the end count as absent):
    /// "the neighbour `n` cells further holds one".
    pub(super) fn ahead(self, n: u32) -> Bits {
        debug_assert!(n > 0 && n < 64);
        let w = self.0;
        Bits([
            (w[0] >> n) | (w[1] << (64 - n)),
            (w[1] >> n) | (w[2] << (64 - n)),
            (w[2] >> n) | (w[3] << (64 - n)),
            w[3] >> n,
        ])
    }

    /// The set whose cell `c` is this set's cell `c - n` (cells before the start count as
    /// absent): "the neighbour `n` cells back holds one".
    pub(super) fn behind(self, n: u32) -> Bits {
        debug_assert!(n > 0 && n < 64);
        let w = self.0;
        Bits([
            w[0] << n,
            (w[1] << n) | (w[0] >> (64 - n)),
            (w[2] << n) | (w[1] >> (64 - n)),
            (w[3] << n) | (w[2] >> (64 - n)),
        ])
    }

    /// The set whose cell `c` is this set's cell `c + offset`, for an offset given as the
    /// board's wrapping `u8` (255 is −1, 240 is −16).
    pub(super) fn at_offset(self, offset: u8) -> Bits {
        if offset == 0 {
            self
        } else if offset < 128 {
            self.ahead(u32::from(offset))
        } else {
            self.behind(256 - u32::from(offset))
        }
    }

    /// The cells in the set, lowest first.
    pub(super) fn cells(self) -> impl Iterator<Item = u8> {
        (0u8..4).flat_map(move |w| {
            let mut word = self.0[usize::from(w)];
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let bit = word.trailing_zeros() as u8;
                word &= word - 1;
                Some(w * 64 + bit)
            })
        })
    }

    pub(super) fn contains(self, cell: u8) -> bool {
        self.0[usize::from(cell >> 6)] >> (cell & 63) & 1 == 1
    }

    pub(super) fn count(self) -> i32 {
        self.0.iter().map(|w| w.count_ones() as i32).sum()
    }
}

impl BitAnd for Bits {
    type Output = Bits;
    fn bitand(self, other: Bits) -> Bits {
        Bits([
            self.0[0] & other.0[0],
            self.0[1] & other.0[1],
            self.0[2] & other.0[2],
            self.0[3] & other.0[3],
        ])
    }
}

impl BitOr for Bits {
    type Output = Bits;
    fn bitor(self, other: Bits) -> Bits {
        Bits([
            self.0[0] | other.0[0],
            self.0[1] | other.0[1],
            self.0[2] | other.0[2],
            self.0[3] | other.0[3],
        ])
    }
}

impl Not for Bits {
    type Output = Bits;
    fn not(self) -> Bits {
        Bits([!self.0[0], !self.0[1], !self.0[2], !self.0[3]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(cells: &[u8]) -> Bits {
        let mut bits = Bits::default();
        for &c in cells {
            bits.toggle(c);
        }
        bits
    }

    #[test]
    fn shifts_move_every_cell_to_its_neighbour_across_words() {
        // Cells on both sides of each word boundary.
        let set = of(&[17, 63, 64, 127, 128, 200, 238]);
        assert_eq!(set.ahead(1), of(&[16, 62, 63, 126, 127, 199, 237]));
        assert_eq!(set.behind(16), of(&[33, 79, 80, 143, 144, 216, 254]));
        assert_eq!(set.at_offset(255), set.behind(1));
        assert_eq!(set.at_offset(240), set.behind(16));
        assert_eq!(set.at_offset(17), set.ahead(17));
        assert_eq!(set.at_offset(0), set);
        // Nothing wraps past either end.
        assert_eq!(of(&[0, 3]).ahead(4), of(&[]));
        assert_eq!(of(&[255, 250]).behind(8), of(&[]));
    }

    #[test]
    fn the_board_has_196_points_inside_its_walls() {
        assert_eq!(ON_BOARD.count(), 196);
        let mut toggled = ON_BOARD;
        toggled.toggle(17);
        toggled.toggle(17);
        assert_eq!(toggled, ON_BOARD);
        assert_eq!((ON_BOARD & !ON_BOARD).count(), 0);
        assert_eq!((ON_BOARD | of(&[0])).count(), 197);
        let cells = [0, 17, 63, 64, 130, 255];
        assert_eq!(of(&cells).cells().collect::<Vec<_>>(), cells);
        assert!(of(&cells).contains(130) && !of(&cells).contains(131));
        assert_eq!(ON_BOARD.cells().count(), 196);
    }
}
