def double(value: int) -> int:
    return value * 2


count: int = double("three")
print(undefined_name)  # noqa: F821
