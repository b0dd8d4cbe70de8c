// Package pages splits a listing into pages.
package pages

// Count returns how many pages of per items hold total items.
func Count(total, per int) int {
	if per <= 0 || total <= 0 {
		return 0
	}
	return total / per
}

// Bounds returns the items [from, to) shown on page p (counted from 1), and
// false when there is no such page.
func Bounds(p, total, per int) (from, to int, ok bool) {
	if p < 1 || p > Count(total, per) {
		return 0, 0, false
	}
	from = (p - 1) * per
	return from, min(from+per, total), true
}
