package settings

import (
	"cmp"
	"fmt"
	"reflect"
)

// The one way a service's New defaults and validates its Config:
//
//	func New(cfg Config, ...) (*Service, error) {
//		settings.FillZero(&cfg, DefaultConfig())
//		if err := cfg.Validate(); err != nil {
//			return nil, fmt.Errorf("nudge: %w", err)
//		}
//
// A zero field means "the default"; a field set out of its range is an
// error that names the field and the range (AtLeast, Positive, InRange,
// Required), never silently replaced. A boolean whose default is true
// cannot be told apart from one left zero, so Config booleans default to
// false. Likewise a nil slice or map takes the default, an empty one
// stays empty.

// FillZero sets every exported field of *cfg that holds its type's zero
// value to the same field of def.
func FillZero[T any](cfg *T, def T) {
	v, d := reflect.ValueOf(cfg).Elem(), reflect.ValueOf(def)
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("settings.FillZero: %T is not a struct", *cfg))
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.CanSet() && f.IsZero() {
			f.Set(d.Field(i))
		}
	}
}

// AtLeast is an error naming field unless v >= lowest.
func AtLeast[N cmp.Ordered](field string, v, lowest N) error {
	if v < lowest {
		return fmt.Errorf("%s is %v: it must be at least %v", field, v, lowest)
	}
	return nil
}

// Positive is an error naming field unless v > 0: a duration, or a count
// of at least one.
func Positive[N cmp.Ordered](field string, v N) error {
	var zero N
	if v <= zero {
		return fmt.Errorf("%s is %v: it must be above 0", field, v)
	}
	return nil
}

// InRange is an error naming field unless lowest <= v <= highest.
func InRange[N cmp.Ordered](field string, v, lowest, highest N) error {
	if v < lowest || v > highest {
		return fmt.Errorf("%s is %v: it must be from %v to %v", field, v, lowest, highest)
	}
	return nil
}

// Required is an error naming field when v is empty.
func Required(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", field)
	}
	return nil
}
