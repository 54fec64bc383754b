"""Running, recording and showing experiments."""
