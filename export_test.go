package sdnlb

import (
	"maps"
	"slices"
)

// SettingCellRows lists the settings settingCells has cells for, so the
// tests can find cells left behind by a row that was renamed or removed.
func SettingCellRows() []string { return slices.Sorted(maps.Keys(settingCells)) }
