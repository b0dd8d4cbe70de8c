package pages

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct{ total, per, want int }{
		{0, 10, 0}, {1, 10, 1}, {10, 10, 1}, {11, 10, 2}, {25, 10, 3}, {5, 0, 0},
	} {
		if got := Count(c.total, c.per); got != c.want {
			t.Errorf("Count(%d, %d) = %d, want %d", c.total, c.per, got, c.want)
		}
	}
}

func TestBounds(t *testing.T) {
	from, to, ok := Bounds(3, 25, 10)
	if !ok || from != 20 || to != 25 {
		t.Errorf("Bounds(3, 25, 10) = %d, %d, %v; want 20, 25, true", from, to, ok)
	}
	if _, _, ok := Bounds(4, 25, 10); ok {
		t.Errorf("Bounds(4, 25, 10): a page past the last")
	}
}
