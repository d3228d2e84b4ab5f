package ddb

import "github.com/quarrydb/quarry/ddb/attr"

// fastDecoder is a request that decodes its common shape without
// encoding/json's reflection: decodeFast fills the request from body (valid
// JSON) and reports true, or leaves it zero and reports false, and the
// request is then decoded by encoding/json, whose behaviour and error
// messages are the reference. GetItem and PutItem, most of a store's
// traffic, have one.
type fastDecoder interface {
	decodeFast(body []byte) bool
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

func (in *GetItemInput) decodeFast(body []byte) bool {
	err := attr.DecodeFields(body, func(name []byte, v attr.Field) (err error) {
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
			return attr.ErrNotSimple
		}
		return err
	})
	if err != nil {
		*in = GetItemInput{}
		return false
	}
	return true
}

func (in *PutItemInput) decodeFast(body []byte) bool {
	err := attr.DecodeFields(body, func(name []byte, v attr.Field) (err error) {
		switch string(name) {
		case "TableName":
			return stringField(v, &in.TableName)
		case "Item":
			in.Item, err = v.Item()
		case "ConditionExpression":
			return stringField(v, &in.ConditionExpression)
		case "ReturnValues":
			in.ReturnValues, err = v.String()
		case "ReturnValuesOnConditionCheckFailure":
			in.ReturnValuesOnConditionCheckFailure, err = v.String()
		case "ReturnConsumedCapacity":
			in.ReturnConsumedCapacity, err = v.String()
		case "ReturnItemCollectionMetrics":
			in.ReturnItemCollectionMetrics, err = v.String()
		default:
			return attr.ErrNotSimple
		}
		return err
	})
	if err != nil {
		*in = PutItemInput{}
		return false
	}
	return true
}
