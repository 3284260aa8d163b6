"""Small, seeded experiments that notebooks run and tests pin (gradient flow, norm placement)."""
