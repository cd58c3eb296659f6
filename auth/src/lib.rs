//! RocketMQ 5's ACL 2.0 model, without I/O: users (`User`), resources (`Topic:orders`, `Group:g1`,
//! `Topic:order*`, `*`), actions, source-IP ranges, ACLs of policies and their evaluation for one
//! request, and the `UserInfo` / `AclInfo` bodies of the user and ACL admin requests (3001-3010).
//! Facts from Apache RocketMQ's `auth` module (5.3+); its code does not carry over.
//!
//! The broker enforces it on remoting requests (`broker::feature::acl2`), the proxy on gRPC ones.

pub mod acl;
pub mod action;
pub mod body;
pub mod evaluate;
pub mod ip_range;
pub mod resource;
pub mod user;

pub use acl::{Acl, Decision, Policy, PolicyEntry, PolicyType};
pub use action::Action;
pub use resource::{Resource, ResourcePattern, ResourceType};
pub use user::{User, UserStatus, UserType};
