//! Client addresses as the limits see them: IPv6 addresses grouped by their /64 (one host or
//! one home usually holds a whole /64, so counting single IPv6 addresses would give an attacker
//! billions of "addresses"), and per-group shares of a slot pool (connections, event streams,
//! WebSockets, connections that have not said `hello`), so that no one address takes them all.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// The address a limit counts `ip` under: an IPv4 address as is (an IPv4-mapped IPv6 address
/// as its IPv4 address), an IPv6 address as its /64 network.
pub fn address_group(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                for segment in &mut segments[4..] {
                    *segment = 0;
                }
                IpAddr::V6(Ipv6Addr::from(segments))
            }
        },
    }
}

/// How many slots of one kind each address group holds, each group at most `per_address`.
#[derive(Debug)]
pub struct AddressShares {
    per_address: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One slot held by an address group; given back when dropped.
#[derive(Debug)]
pub struct AddressShare {
    shares: Arc<AddressShares>,
    group: IpAddr,
}

impl AddressShares {
    /// Shares of at most `per_address` slots per address group (at least 1).
    pub fn new(per_address: usize) -> Arc<AddressShares> {
        Arc::new(AddressShares {
            per_address: per_address.max(1),
            held: Mutex::new(HashMap::new()),
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for `ip`'s group, or `None` when the group holds its share already.
    pub fn try_take(self: &Arc<Self>, ip: IpAddr) -> Option<AddressShare> {
        let group = address_group(ip);
        let mut table = self.table();
        let held = table.entry(group).or_insert(0);
        if *held >= self.per_address {
            return None;
        }
        *held += 1;
        Some(AddressShare {
            shares: self.clone(),
            group,
        })
    }

    /// Slots `ip`'s group holds now.
    pub fn held_by(&self, ip: IpAddr) -> usize {
        self.table().get(&address_group(ip)).copied().unwrap_or(0)
    }
}

impl Drop for AddressShare {
    fn drop(&mut self) {
        let mut table = self.shares.table();
        if let Some(held) = table.get_mut(&self.group) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                table.remove(&self.group);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ipv6_addresses_of_one_slash_64_are_one_group_and_ipv4_stays_whole() {
        assert_eq!(
            address_group(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
            ip("2001:db8:1:2::")
        );
        assert_eq!(
            address_group(ip("2001:db8:1:2::1")),
            address_group(ip("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(
            address_group(ip("2001:db8:1:2::1")),
            address_group(ip("2001:db8:1:3::1"))
        );
        assert_eq!(address_group(ip("10.0.0.7")), ip("10.0.0.7"));
        assert_eq!(address_group(ip("::ffff:10.0.0.7")), ip("10.0.0.7"));
    }

    #[test]
    fn a_group_holds_at_most_its_share_and_gets_slots_back_when_dropped() {
        let shares = AddressShares::new(2);
        let a = shares.try_take(ip("2001:db8::1")).unwrap();
        let b = shares.try_take(ip("2001:db8::2")).unwrap();
        assert!(shares.try_take(ip("2001:db8::3")).is_none(), "same /64");
        assert!(shares.try_take(ip("10.0.0.1")).is_some(), "another address");
        assert_eq!(shares.held_by(ip("2001:db8::99")), 2);
        drop(a);
        let c = shares.try_take(ip("2001:db8::3"));
        assert!(c.is_some());
        drop((b, c));
        assert_eq!(shares.held_by(ip("2001:db8::1")), 0);
        assert!(shares.table().is_empty(), "no entry left behind");
    }
}
