function double(value: number): number {
  return value * 2;
}

export const count: number = double("three");
