package v1alpha1

import (
	"bytes"
	"encoding/json"
)

// pingRecordFields is PingRecord without its methods, so that encoding it
// does not recurse.
type pingRecordFields PingRecord

// MarshalJSON encodes the record as a JSON string holding its JSON object
// (see PingRecord).
func (p PingRecord) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(pingRecordFields(p))
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(inner))
}

// UnmarshalJSON reads a record stored as a string (see PingRecord) or, as
// earlier versions stored it, as an object.
func (p *PingRecord) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var inner string
		if err := json.Unmarshal(data, &inner); err != nil {
			return err
		}
		data = []byte(inner)
	}
	var f pingRecordFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*p = PingRecord(f)
	return nil
}
