//! Torus geometry: node coordinates, dimensions and links (part of the register contract:
//! `TORUS_DIMS`, `NODE_ID`, the link bits).

#[allow(unused_imports)]
use super::*;

/// Largest extent of one torus dimension: 16 × 16 × 16 = [`MAX_NODES`].
pub const MAX_DIM: u8 = 16;
/// Most nodes in a torus; node ids fit 12 bits (the packet header relies on it).
pub const MAX_NODES: u32 = 4096;

/// A node's position in the torus (each coordinate below its dimension's extent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Coord {
    /// Position along X.
    pub x: u8,
    /// Position along Y.
    pub y: u8,
    /// Position along Z.
    pub z: u8,
}

impl Coord {
    /// The `NODE_COORD` value `x | y << 8 | z << 16`.
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::Coord;
    /// let c = Coord { x: 1, y: 2, z: 15 };
    /// assert_eq!(c.pack(), 0x000F_0201);
    /// assert_eq!(Coord::unpack(0x000F_0201).unwrap(), c);
    /// assert!(Coord::unpack(0x0000_0010).is_err()); // x = 16
    /// ```
    pub const fn pack(self) -> u32 {
        self.x as u32 | (self.y as u32) << 8 | (self.z as u32) << 16
    }

    /// Reads `NODE_COORD`: each coordinate below [`MAX_DIM`], bits 24..31 clear. Whether it
    /// lies inside a given torus is [`Dims::contains`].
    pub fn unpack(v: u32) -> Result<Coord> {
        let c = Coord {
            x: v as u8,
            y: (v >> 8) as u8,
            z: (v >> 16) as u8,
        };
        if v >> 24 != 0 || c.x >= MAX_DIM || c.y >= MAX_DIM || c.z >= MAX_DIM {
            return Err(config(
                "NODE_COORD",
                format_args!("{v:#x}"),
                "x, y, z < 16, bits 24..31 clear",
            ));
        }
        Ok(c)
    }

    /// The coordinate along `dim`.
    pub const fn get(self, dim: Dim) -> u8 {
        match dim {
            Dim::X => self.x,
            Dim::Y => self.y,
            Dim::Z => self.z,
        }
    }

    /// This coordinate with the one along `dim` replaced.
    pub const fn with(mut self, dim: Dim, v: u8) -> Coord {
        match dim {
            Dim::X => self.x = v,
            Dim::Y => self.y = v,
            Dim::Z => self.z = v,
        }
        self
    }
}

/// A torus's extents, each in `1..=MAX_DIM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dims {
    x: u8,
    y: u8,
    z: u8,
}

/// `XxYxZ`, as `skifrun --torus` and `torus-sim` spell it.
impl std::fmt::Display for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.x, self.y, self.z)
    }
}

/// Parses `XxYxZ` (`x` or `X`), each extent in `1..=16`.
///
/// # Examples
/// ```
/// use fpga::regs::Dims;
/// assert_eq!("4x2X1".parse::<Dims>().unwrap(), Dims::new(4, 2, 1).unwrap());
/// assert!("4x2".parse::<Dims>().is_err());
/// assert!("17x1x1".parse::<Dims>().is_err());
/// ```
impl std::str::FromStr for Dims {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::BadConfig(format!("dims {s:?}: expected XxYxZ, e.g. 4x4x4"));
        let v: Vec<u8> = s
            .split(['x', 'X'])
            .map(|p| {
                p.trim().parse::<u8>().map_err(|_| {
                    Error::BadConfig(format!("dims {s:?}: {p:?} is not an extent in 1..=16"))
                })
            })
            .collect::<Result<_>>()?;
        match v[..] {
            [x, y, z] => Dims::new(x, y, z),
            _ => Err(bad()),
        }
    }
}

impl Dims {
    /// Checked constructor.
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::Dims;
    /// let d = Dims::new(4, 4, 2).unwrap();
    /// assert_eq!(d.nodes(), 32);
    /// assert!(Dims::new(0, 4, 4).is_err());
    /// assert!(Dims::new(17, 1, 1).is_err());
    /// ```
    pub fn new(x: u8, y: u8, z: u8) -> Result<Dims> {
        for v in [x, y, z] {
            if !(1..=MAX_DIM).contains(&v) {
                return Err(config(
                    "torus dimensions",
                    format_args!("{x}x{y}x{z}"),
                    "each in 1..=16",
                ));
            }
        }
        Ok(Dims { x, y, z })
    }

    /// The `TORUS_DIMS` value `X | Y << 8 | Z << 16`.
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::Dims;
    /// let d = Dims::new(16, 8, 1).unwrap();
    /// assert_eq!(d.pack(), 0x0001_0810);
    /// assert_eq!(Dims::unpack(d.pack()).unwrap(), d);
    /// ```
    pub const fn pack(self) -> u32 {
        self.x as u32 | (self.y as u32) << 8 | (self.z as u32) << 16
    }

    /// Reads `TORUS_DIMS`: each extent in `1..=16`, bits 24..31 clear.
    pub fn unpack(v: u32) -> Result<Dims> {
        if v >> 24 != 0 {
            return Err(config(
                "TORUS_DIMS",
                format_args!("{v:#x}"),
                "bits 24..31 must be clear",
            ));
        }
        Dims::new(v as u8, (v >> 8) as u8, (v >> 16) as u8)
    }

    /// Extent along `dim`.
    pub const fn get(self, dim: Dim) -> u8 {
        match dim {
            Dim::X => self.x,
            Dim::Y => self.y,
            Dim::Z => self.z,
        }
    }

    /// Number of nodes `X * Y * Z` (1..=4096).
    pub const fn nodes(self) -> u32 {
        self.x as u32 * self.y as u32 * self.z as u32
    }

    /// Whether `c` is a node of this torus.
    pub const fn contains(self, c: Coord) -> bool {
        c.x < self.x && c.y < self.y && c.z < self.z
    }

    /// Linear node id `x + X * (y + Y * z)`: the rank in a SkifCh `NetAddr`.
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::{Coord, Dims};
    /// let d = Dims::new(4, 3, 2).unwrap();
    /// let c = Coord { x: 3, y: 2, z: 1 };
    /// assert_eq!(d.node_id(c).unwrap(), 23);
    /// assert_eq!(d.coord(23).unwrap(), c);
    /// assert!(d.coord(24).is_err());
    /// ```
    pub fn node_id(self, c: Coord) -> Result<u16> {
        if !self.contains(c) {
            return Err(config(
                "coordinate",
                format_args!("{c:?}"),
                "outside the torus",
            ));
        }
        Ok(c.x as u16 + self.x as u16 * (c.y as u16 + self.y as u16 * c.z as u16))
    }

    /// Inverse of [`Dims::node_id`].
    pub fn coord(self, id: u32) -> Result<Coord> {
        if id >= self.nodes() {
            return Err(config("node id", id, "not below the node count"));
        }
        let (x, y) = (self.x as u32, self.y as u32);
        Ok(Coord {
            x: (id % x) as u8,
            y: (id / x % y) as u8,
            z: (id / (x * y)) as u8,
        })
    }

    /// The node across `link` from `c`, with wrap-around (in an extent of 1 it is `c`).
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::{Coord, Dims, Link};
    /// let d = Dims::new(4, 4, 4).unwrap();
    /// let c = Coord { x: 0, y: 3, z: 1 };
    /// assert_eq!(d.neighbour(c, Link::MinusX).unwrap(), Coord { x: 3, ..c });
    /// assert_eq!(d.neighbour(c, Link::PlusY).unwrap(), Coord { y: 0, ..c });
    /// ```
    pub fn neighbour(self, c: Coord, link: Link) -> Result<Coord> {
        if !self.contains(c) {
            return Err(config(
                "coordinate",
                format_args!("{c:?}"),
                "outside the torus",
            ));
        }
        let (dim, n) = (link.dim(), self.get(link.dim()));
        let v = c.get(dim);
        let v = match link.dir() {
            Dir::Plus => (v + 1) % n,
            Dir::Minus => (v + n - 1) % n,
        };
        Ok(c.with(dim, v))
    }
}

/// A torus dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// X, routed first by dimension-order routing.
    X,
    /// Y, routed second.
    Y,
    /// Z, routed last.
    Z,
}

/// A direction along a dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Towards increasing coordinates (wrapping from the last to 0).
    Plus,
    /// Towards decreasing coordinates.
    Minus,
}

/// One of a node's six torus links; the discriminant is the link index used by
/// `LINK_STATE` bits: 0 +X, 1 −X, 2 +Y, 3 −Y, 4 +Z, 5 −Z. Also the router's network ports
/// in the torus simulator ([`crate::torus::Port`] is this type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Link {
    /// Index 0.
    PlusX = 0,
    /// Index 1.
    MinusX = 1,
    /// Index 2.
    PlusY = 2,
    /// Index 3.
    MinusY = 3,
    /// Index 4.
    PlusZ = 4,
    /// Index 5.
    MinusZ = 5,
}

impl Link {
    /// All links in index order.
    pub const ALL: [Link; 6] = [
        Link::PlusX,
        Link::MinusX,
        Link::PlusY,
        Link::MinusY,
        Link::PlusZ,
        Link::MinusZ,
    ];

    /// The link with index `i` (0..6).
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::{Dim, Dir, Link};
    /// let l = Link::from_index(3).unwrap();
    /// assert_eq!((l.dim(), l.dir(), l.index()), (Dim::Y, Dir::Minus, 3));
    /// assert_eq!(Link::new(Dim::Z, Dir::Plus), Link::PlusZ);
    /// assert!(Link::from_index(6).is_err());
    /// ```
    pub fn from_index(i: u8) -> Result<Link> {
        Link::ALL
            .get(i as usize)
            .copied()
            .ok_or_else(|| config("link index", i, "must be below 6"))
    }

    /// The link along `dim` in direction `dir`.
    pub const fn new(dim: Dim, dir: Dir) -> Link {
        Link::ALL[(dim as usize) * 2 + (dir as usize)]
    }

    /// Index 0..6, the `LINK_STATE` bit.
    pub const fn index(self) -> u8 {
        self as u8
    }

    /// The dimension it runs along.
    pub const fn dim(self) -> Dim {
        match self.index() / 2 {
            0 => Dim::X,
            1 => Dim::Y,
            _ => Dim::Z,
        }
    }

    /// Its direction.
    pub const fn dir(self) -> Dir {
        if self.index() & 1 == 0 {
            Dir::Plus
        } else {
            Dir::Minus
        }
    }

    /// The link a packet sent on `self` arrives on at the neighbour.
    pub const fn opposite(self) -> Link {
        Link::ALL[(self.index() ^ 1) as usize]
    }

    /// The link along axis `axis` (0 = X, 1 = Y, 2 = Z; taken modulo 3) in the + (`plus`)
    /// or − direction: the simulator's indexing.
    ///
    /// # Examples
    /// ```
    /// use fpga::regs::Link;
    /// assert_eq!(Link::along(1, false), Link::MinusY);
    /// assert_eq!((Link::MinusY.axis(), Link::MinusY.plus()), (1, false));
    /// assert_eq!(Link::MinusY.to_string(), "Y-");
    /// ```
    pub const fn along(axis: usize, plus: bool) -> Link {
        Link::ALL[(axis % 3) * 2 + if plus { 0 } else { 1 }]
    }

    /// The axis it runs along as an index: 0 (X), 1 (Y) or 2 (Z).
    pub const fn axis(self) -> usize {
        (self.index() / 2) as usize
    }

    /// `true` for the + direction.
    pub const fn plus(self) -> bool {
        self.index() & 1 == 0
    }
}

/// `X+`, `Y-`, …
impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = ["X", "Y", "Z"][self.axis()];
        write!(f, "{d}{}", if self.plus() { '+' } else { '-' })
    }
}
