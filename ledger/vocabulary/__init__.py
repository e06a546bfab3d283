"""The vocabulary, the bottom layer: plan drafts and their validation, the events and the line format of a log,
the contract's value types, and the errors with their stable codes.

Every other layer speaks it; it imports none of them (no reducer, rule, store or front door).
"""
