//! ACL 2.0 admin headers: AUTH_CREATE_USER .. AUTH_LIST_ACL (3001-3010). Every field is optional on
//! the wire; the handlers answer a missing one with Apache's texts.

use super::fields::command_header;

command_header! {
    /// AUTH_CREATE_USER (3001), AUTH_UPDATE_USER (3002), AUTH_DELETE_USER (3003), AUTH_GET_USER
    /// (3004); create and update carry a `UserInfo` body.
    pub struct UserRequestHeader {
        username: Option<String> = "username",
    }
}

command_header! {
    /// AUTH_LIST_USER (3005): users whose name contains `filter`.
    pub struct ListUsersRequestHeader {
        filter: Option<String> = "filter",
    }
}

command_header! {
    /// AUTH_CREATE_ACL (3006), AUTH_UPDATE_ACL (3007), AUTH_GET_ACL (3009): `subject` is `User:NAME`;
    /// create and update carry an `AclInfo` body.
    pub struct AclRequestHeader {
        subject: Option<String> = "subject",
    }
}

command_header! {
    /// AUTH_DELETE_ACL (3008): the subject's whole ACL, or with `resource` that resource's entry of
    /// the `policyType` policy (Custom when absent).
    pub struct DeleteAclRequestHeader {
        subject: Option<String> = "subject",
        policy_type: Option<String> = "policyType",
        resource: Option<String> = "resource",
    }
}

command_header! {
    /// AUTH_LIST_ACL (3010): ACLs whose subject contains `subjectFilter`, with only the entries whose
    /// resource contains `resourceFilter`.
    pub struct ListAclsRequestHeader {
        subject_filter: Option<String> = "subjectFilter",
        resource_filter: Option<String> = "resourceFilter",
    }
}
