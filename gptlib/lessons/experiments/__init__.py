"""Small, seeded experiments that notebooks run and tests pin (gradient flow, norm placement),
and the lesson variants of the model they run them on (`variants`)."""
