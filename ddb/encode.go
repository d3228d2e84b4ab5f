package ddb

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/quarrydb/quarry/ddb/attr"
)

// The outputs of the busiest operations encode themselves: encoding/json
// would re-scan every item's JSON (from attr.Item's MarshalJSON) to
// validate and compact it, which would be the largest part of a Query
// page's cost. The output is byte for byte what encoding/json writes.

// jsonAppender is an output that appends its own JSON encoding.
type jsonAppender interface {
	appendJSON(buf *bytes.Buffer) error
}

// fields writes the members of a JSON object, each preceded by its name.
type fields struct {
	buf *bytes.Buffer
	n   int
}

func (f *fields) name(n string) {
	if f.n > 0 {
		f.buf.WriteByte(',')
	}
	f.n++
	f.buf.WriteByte('"')
	f.buf.WriteString(n)
	f.buf.WriteString(`":`)
}

// item writes a non-empty item (omitempty, as the struct tags say).
func (f *fields) item(n string, it attr.Item) {
	if len(it) == 0 {
		return
	}
	f.name(n)
	it.AppendJSON(f.buf)
}

// value writes v with encoding/json unless it is nil (for rarely present
// members).
func (f *fields) value(n string, v any, isNil bool) error {
	if isNil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f.name(n)
	f.buf.Write(b)
	return nil
}

func (o *GetItemOutput) appendJSON(buf *bytes.Buffer) error {
	buf.WriteByte('{')
	f := fields{buf: buf}
	switch {
	case o.itemJSON != nil:
		f.name("Item")
		buf.Write(o.itemJSON.Bytes())
	case o.Item != nil:
		// Present even when empty: a projection that matches no attribute
		// of an existing item answers "Item": {}, a missing item no Item.
		f.name("Item")
		o.Item.AppendJSON(buf)
	}
	if err := f.value("ConsumedCapacity", o.ConsumedCapacity, o.ConsumedCapacity == nil); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

func (o *ItemOutput) appendJSON(buf *bytes.Buffer) error {
	buf.WriteByte('{')
	f := fields{buf: buf}
	f.item("Attributes", o.Attributes)
	if err := f.value("ConsumedCapacity", o.ConsumedCapacity, o.ConsumedCapacity == nil); err != nil {
		return err
	}
	if err := f.value("ItemCollectionMetrics", o.ItemCollectionMetrics, o.ItemCollectionMetrics == nil); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

func (o *QueryOutput) appendJSON(buf *bytes.Buffer) error {
	buf.WriteByte('{')
	f := fields{buf: buf}
	if o.itemsJSON != nil {
		f.name("Items")
		buf.WriteByte('[')
		buf.Write(o.itemsJSON.Bytes())
		buf.WriteByte(']')
	} else if o.Items != nil {
		f.name("Items")
		buf.WriteByte('[')
		for i, it := range *o.Items {
			if i > 0 {
				buf.WriteByte(',')
			}
			if it == nil {
				buf.WriteString("null")
				continue
			}
			it.AppendJSON(buf)
		}
		buf.WriteByte(']')
	}
	f.name("Count")
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), o.Count, 10))
	f.name("ScannedCount")
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), o.ScannedCount, 10))
	f.item("LastEvaluatedKey", o.LastEvaluatedKey)
	if err := f.value("ConsumedCapacity", o.ConsumedCapacity, o.ConsumedCapacity == nil); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

// releaser is an output holding pooled memory, to give back once the
// output is encoded.
type releaser interface{ release() }

func (o *GetItemOutput) release() {
	if o.itemJSON != nil {
		putBuffer(o.itemJSON)
		o.itemJSON = nil
	}
}

func (o *QueryOutput) release() {
	if o.itemsJSON != nil {
		putBuffer(o.itemsJSON)
		o.itemsJSON = nil
	}
}

// encodeOutput appends out's JSON encoding (without a trailing newline).
func encodeOutput(buf *bytes.Buffer, out any) error {
	if a, ok := out.(jsonAppender); ok {
		return a.appendJSON(buf)
	}
	enc := json.NewEncoder(buf)
	if err := enc.Encode(out); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// buffers recycles request and response buffers; large ones are dropped
// rather than kept.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 1 << 20

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	buffers.Put(b)
}
