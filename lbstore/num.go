package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sdnlb/sdnlb"
)

// numKind is the row of object_numbers that numbers one kind of object.
type numKind string

const (
	numVIP    numKind = "vip"
	numMember numKind = "member"
)

// nextNum gives a new object of kind its number (sdnlb.VIP.Num): one more
// than the last given, which the row records, so that a number is never
// given twice, not even once its object is deleted. The update holds the
// row until the transaction ends, so writers on other nodes take turns.
func nextNum(ctx context.Context, tx *Tx, kind numKind) (uint32, error) {
	var num uint32
	err := tx.GetContext(ctx, &num, `UPDATE object_numbers SET last = last + 1 WHERE kind = ? AND last < ? RETURNING last`,
		kind, sdnlb.NumLimit-1)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, sdnlb.Errorf(sdnlb.ECONFLICT,
			"every %s number has been given (%d): the cookies of the flows carry a %s's number in 24 bits, and a number is never given twice",
			kind, sdnlb.NumLimit-1, kind)
	} else if err != nil {
		return 0, fmt.Errorf("number %s: %w", kind, err)
	}
	return num, nil
}
