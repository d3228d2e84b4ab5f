package ddb

import "github.com/quarrydb/quarry/ddb/attr"

// fastDecoder is a request that decodes its common shape without
// encoding/json's reflection: decodeFast fills the request from body (valid
// JSON) and reports true, or leaves it zero and reports false, and the
// request is then decoded by encoding/json, whose behaviour and error
// messages are the reference. GetItem, PutItem, UpdateItem, DeleteItem and
// TransactWriteItems, most of a store's traffic, have one.
//
// A member repeated in the body keeps its last value when it is a string,
// a bool or an item (encoding/json replaces those); a repeated object or
// array member other than an item is not simple, since encoding/json
// merges it into the first one's value.
type fastDecoder interface {
	decodeFast(body []byte) bool
}

// decodeMembers passes each member of body to member and reports true, or
// leaves *in zero and reports false when member or the body refuses
// (the request then goes to encoding/json).
func decodeMembers[T any](body []byte, in *T, member func(name []byte, v attr.Field) error) bool {
	if err := attr.DecodeFields(body, member); err != nil {
		var zero T
		*in = zero
		return false
	}
	return true
}

// stringField reads a string member into a *string field.
func stringField(v attr.Field, dst **string) error {
	s, err := v.String()
	if err != nil {
		return err
	}
	*dst = &s
	return nil
}

// stringMap reads an object of strings (ExpressionAttributeNames).
func stringMap(v attr.Field) (map[string]string, error) {
	m := map[string]string{}
	err := v.Object(func(name []byte, v attr.Field) error {
		s, err := v.String()
		m[string(name)] = s
		return err
	})
	return m, err
}

// valueMap reads an object of AttributeValues (ExpressionAttributeValues).
func valueMap(v attr.Field) (map[string]attr.Value, error) {
	m := map[string]attr.Value{}
	err := v.Object(func(name []byte, v attr.Field) error {
		av, err := v.Value()
		m[string(name)] = av
		return err
	})
	return m, err
}

// decodeMember reads the expression parameter named name; any other name
// is ErrNotSimple.
func (in *exprInput) decodeMember(name []byte, v attr.Field) (err error) {
	switch string(name) {
	case "ExpressionAttributeNames":
		if in.ExpressionAttributeNames != nil {
			return attr.ErrNotSimple // repeated: encoding/json merges
		}
		in.ExpressionAttributeNames, err = stringMap(v)
	case "ExpressionAttributeValues":
		if in.ExpressionAttributeValues != nil {
			return attr.ErrNotSimple // repeated: encoding/json merges
		}
		in.ExpressionAttributeValues, err = valueMap(v)
	default:
		return attr.ErrNotSimple
	}
	return err
}

// decodeMember reads the member of PutItem, UpdateItem and DeleteItem's
// common parameters named name; any other name, and the legacy Expected,
// are ErrNotSimple.
func (w *writeInput) decodeMember(name []byte, v attr.Field) (err error) {
	switch string(name) {
	case "TableName":
		return stringField(v, &w.TableName)
	case "ConditionExpression":
		return stringField(v, &w.ConditionExpression)
	case "ConditionalOperator":
		w.ConditionalOperator, err = v.String()
	case "ReturnValues":
		w.ReturnValues, err = v.String()
	case "ReturnValuesOnConditionCheckFailure":
		w.ReturnValuesOnConditionCheckFailure, err = v.String()
	case "ReturnConsumedCapacity":
		w.ReturnConsumedCapacity, err = v.String()
	case "ReturnItemCollectionMetrics":
		w.ReturnItemCollectionMetrics, err = v.String()
	default:
		return w.exprInput.decodeMember(name, v)
	}
	return err
}

func (in *GetItemInput) decodeFast(body []byte) bool {
	return decodeMembers(body, in, func(name []byte, v attr.Field) (err error) {
		switch string(name) {
		case "TableName":
			return stringField(v, &in.TableName)
		case "Key":
			in.Key, err = v.Item()
		case "ProjectionExpression":
			return stringField(v, &in.ProjectionExpression)
		case "ConsistentRead":
			var b bool
			if b, err = v.Bool(); err == nil {
				in.ConsistentRead = &b
			}
		case "ReturnConsumedCapacity":
			in.ReturnConsumedCapacity, err = v.String()
		default:
			return in.exprInput.decodeMember(name, v)
		}
		return err
	})
}

func (in *PutItemInput) decodeFast(body []byte) bool {
	return decodeMembers(body, in, func(name []byte, v attr.Field) (err error) {
		if string(name) == "Item" {
			in.Item, err = v.Item()
			return err
		}
		return in.writeInput.decodeMember(name, v)
	})
}

func (in *UpdateItemInput) decodeFast(body []byte) bool {
	return decodeMembers(body, in, func(name []byte, v attr.Field) (err error) {
		switch string(name) {
		case "Key":
			in.Key, err = v.Item()
			return err
		case "UpdateExpression":
			return stringField(v, &in.UpdateExpression)
		}
		return in.writeInput.decodeMember(name, v)
	})
}

func (in *DeleteItemInput) decodeFast(body []byte) bool {
	return decodeMembers(body, in, func(name []byte, v attr.Field) (err error) {
		if string(name) == "Key" {
			in.Key, err = v.Item()
			return err
		}
		return in.writeInput.decodeMember(name, v)
	})
}

func (in *TransactWriteItemsInput) decodeFast(body []byte) bool {
	return decodeMembers(body, in, func(name []byte, v attr.Field) (err error) {
		switch string(name) {
		case "TransactItems":
			if in.TransactItems != nil {
				return attr.ErrNotSimple // repeated: encoding/json merges
			}
			in.TransactItems = []TransactWriteItem{}
			return v.Array(func(v attr.Field) error {
				var it TransactWriteItem
				if err := it.decodeFast(v); err != nil {
					return err
				}
				in.TransactItems = append(in.TransactItems, it)
				return nil
			})
		case "ClientRequestToken":
			return stringField(v, &in.ClientRequestToken)
		case "ReturnConsumedCapacity":
			in.ReturnConsumedCapacity, err = v.String()
		case "ReturnItemCollectionMetrics":
			in.ReturnItemCollectionMetrics, err = v.String()
		default:
			return attr.ErrNotSimple
		}
		return err
	})
}

// decodeFast reads one entry of TransactItems; null is ErrNotSimple.
func (w *TransactWriteItem) decodeFast(v attr.Field) error {
	return v.Object(func(name []byte, v attr.Field) error {
		var dst **TransactAction
		switch string(name) {
		case "ConditionCheck":
			dst = &w.ConditionCheck
		case "Put":
			dst = &w.Put
		case "Update":
			dst = &w.Update
		case "Delete":
			dst = &w.Delete
		default:
			return attr.ErrNotSimple
		}
		if *dst != nil {
			return attr.ErrNotSimple // repeated: encoding/json merges
		}
		a := new(TransactAction)
		if err := a.decodeFast(v); err != nil {
			return err
		}
		*dst = a
		return nil
	})
}

// decodeFast reads one action of TransactWriteItems; null is ErrNotSimple.
func (a *TransactAction) decodeFast(v attr.Field) error {
	return v.Object(func(name []byte, v attr.Field) (err error) {
		switch string(name) {
		case "TableName":
			return stringField(v, &a.TableName)
		case "Item":
			a.Item, err = v.Item()
		case "Key":
			a.Key, err = v.Item()
		case "UpdateExpression":
			return stringField(v, &a.UpdateExpression)
		case "ConditionExpression":
			return stringField(v, &a.ConditionExpression)
		case "ReturnValuesOnConditionCheckFailure":
			a.ReturnValuesOnConditionCheckFailure, err = v.String()
		default:
			return a.exprInput.decodeMember(name, v)
		}
		return err
	})
}
