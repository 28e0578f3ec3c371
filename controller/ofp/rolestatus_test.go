package ofp

import "testing"

func TestRoleStatusOf(t *testing.T) {
	// An ONFT_ROLE_STATUS as Open vSwitch 2.x sends it to an OF1.3
	// controller that was MASTER when another asked for the role; the
	// body layout is ovs's onf_role_status (include/openflow/onf-ext.h).
	data := []byte{
		0x00, 0x00, 0x00, 0x03, // role: SLAVE
		0x00,             // reason: MASTER_REQUEST
		0x00, 0x00, 0x00, // pad
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // generation id 9
	}
	b := Append(nil, 5, Experimenter{Experimenter: ONFExperimenterID, ExpType: ONFTypeRoleStatus, Data: data})
	_, m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	s, ok, err := RoleStatusOf(m.(*Experimenter))
	if !ok || err != nil || s != (RoleStatus{Role: RoleSlave, Reason: RoleReasonMasterRequest, GenerationID: 9}) {
		t.Fatalf("RoleStatusOf = %+v, %v, %v", s, ok, err)
	}
	t.Run("Other", func(t *testing.T) {
		if _, ok, _ := RoleStatusOf(&Experimenter{Experimenter: 0x2320, ExpType: 1911}); ok {
			t.Fatal("a Nicira message taken for a role status")
		}
	})
	t.Run("ErrShort", func(t *testing.T) {
		if _, ok, err := RoleStatusOf(&Experimenter{Experimenter: ONFExperimenterID, ExpType: ONFTypeRoleStatus, Data: data[:8]}); !ok || err != ErrBadLength {
			t.Fatalf("short: ok %v, err %v", ok, err)
		}
	})
}
