"""The seed-004 lending strategies (Lee et al., FAccT 2026) as RLlib algorithms."""
